// emulator_compare.h - runs a kernel on the CPU backend and in the SIMT emulator (the GPU lowering on CPU threads, NVIDIA or AMD flavoured) and compares every array
#pragma once
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

#include <kdsl/kdsl.h>

#include "src/tools/example_kernels.h"
#include "tests/support/simt_emulator.h"

using namespace kdsl;

namespace emulator_test {

struct Arg {
  std::vector<uint8_t> bytes;  // an array (empty: a scalar)
  DType dtype = DType::F32;
  ArgValue scalar;
};

template <class T>
Arg array(const std::vector<T> &v) {
  Arg a;
  a.bytes.resize(v.size() * sizeof(T));
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  a.dtype = detail::dtype_of_storage<T>();
  return a;
}
template <class T>
Arg value(T v) {
  Arg a;
  a.scalar = make_arg(v);
  return a;
}

// The GPU lowering a comparison runs: a target's hooks and warp size; with `tensor_cores`
// (sm_80, sm_90a), dots the plan puts on mma.sync or wgmma run as emulated instructions, their
// loads pipelined over `num_stages`.
struct Flavour {
  std::string arch = "sm_80";
  bool tensor_cores = false;
  int num_stages = 2;
};

// The targets every emulated kernel test runs on: NVIDIA's warps of 32 (NVVM) and AMD CDNA's
// waves of 64 (AMDGCN: ds_bpermute over the wave, the dispatch packet, 64 KiB of LDS).
inline const char *const kEmulatedArchs[] = {"sm_80", "gfx942"};

// One doctest subcase per emulated target: the test case runs once for each, its failures
// naming the target.
inline Flavour each_emulated_target() {
  Flavour f;
  for (const char *arch : kEmulatedArchs)
    SUBCASE(arch) f.arch = arch;
  return f;
}

inline double element(const Arg &a, size_t i) {
  switch (a.dtype) {
    case DType::F32: return reinterpret_cast<const float *>(a.bytes.data())[i];
    case DType::F16: return float(reinterpret_cast<const half *>(a.bytes.data())[i]);
    case DType::BF16: return float(reinterpret_cast<const bfloat16 *>(a.bytes.data())[i]);
    case DType::F8E4M3: return float(reinterpret_cast<const float8_e4m3 *>(a.bytes.data())[i]);
    case DType::I32: return reinterpret_cast<const int32_t *>(a.bytes.data())[i];
    case DType::I8: return reinterpret_cast<const int8_t *>(a.bytes.data())[i];
    case DType::U8: return a.bytes[i];
    case DType::U32: return reinterpret_cast<const uint32_t *>(a.bytes.data())[i];
    case DType::I64: return double(reinterpret_cast<const int64_t *>(a.bytes.data())[i]);
    default: return 0;
  }
}

// Bytes of a known pattern after each array, checked after both runs: a kernel (or a test
// that passes too short an array) writing past the end fails here, rather than corrupting
// the heap for a later test to crash on.
constexpr size_t kGuardBytes = 4096;
constexpr uint8_t kGuardByte = 0xA5;

inline void add_guard(std::vector<Arg> &args) {
  for (Arg &a : args)
    if (!a.bytes.empty()) a.bytes.resize(a.bytes.size() + kGuardBytes, kGuardByte);
}

// Checks and removes the guard of each array; false if a run wrote into one.
inline bool remove_guard(std::vector<Arg> &args, const char *run) {
  bool intact = true;
  for (size_t i = 0; i < args.size(); ++i) {
    std::vector<uint8_t> &b = args[i].bytes;
    if (b.empty()) continue;
    for (size_t j = b.size() - kGuardBytes; j < b.size(); ++j) {
      if (b[j] != kGuardByte) {
        FAIL_CHECK(std::string(run) << " wrote past the end of argument " << i << " (" << (j - (b.size() - kGuardBytes)) << " bytes after it)");
        intact = false;
        break;
      }
    }
    b.resize(b.size() - kGuardBytes);
  }
  return intact;
}

// How compare measures a difference. Elementwise: |want - got| / (1e-3 + |want|), the largest
// over the elements. Normwise: the largest |want - got| over the array's largest |want|, for
// outputs that are sums of terms of either sign, where an output that cancels to near zero
// shows the two backends' roundings of its terms far above its own size (a wrong term still
// moves it by a fraction of the largest output).
enum class Metric { Elementwise, Normwise };

// Runs `k` on the CPU backend and in the emulator on copies of the same arrays; returns the
// largest relative difference (`metric`) over every array (inputs included: in-place
// kernels), or infinity if either run wrote past an array.
inline double compare(const tools::NamedKernel &k, const Grid &g, const std::vector<Arg> &args, const Flavour &flavour = {},
                      Metric metric = Metric::Elementwise) {
  std::vector<Arg> host = args, emu = args;
  add_guard(host);
  add_guard(emu);
  std::vector<ArgValue> values;
  for (Arg &a : host) values.push_back(a.bytes.empty() ? a.scalar : make_arg(static_cast<void *>(a.bytes.data())));
  auto cpu = detail::make_kernel(Device::cpu(1), k.signature, {k.num_warps, 2});
  detail::launch(*cpu, g, values.data(), values.size());

  std::vector<ir::ArgClass> classes;
  std::vector<uint64_t> slots;
  for (size_t i = 0; i < emu.size(); ++i) {
    const detail::TypeDesc &p = k.signature.params[i];
    if (!emu[i].bytes.empty()) {
      uint64_t address = reinterpret_cast<uint64_t>(emu[i].bytes.data());
      slots.push_back(address);
      classes.push_back(address % 16 == 0 ? ir::ArgClass::Divisible16 : ir::ArgClass::None);
    } else if (is_float(p.elem)) {
      slots.push_back(std::bit_cast<uint32_t>(float(std::bit_cast<double>(emu[i].scalar.bits))));
      classes.push_back(ir::ArgClass::None);
    } else {
      int64_t v = int64_t(emu[i].scalar.bits);
      slots.push_back(uint64_t(v));
      classes.push_back(v == 1 ? ir::ArgClass::EqualToOne : v % 16 == 0 ? ir::ArgClass::Divisible16 : ir::ArgClass::None);
    }
  }
  static int serial = 0;
  simt::EmulatedKernel kernel = simt::compile_for_emulation(tools::trace_kernel(k.signature, classes), "kdsl_emulated_" + std::to_string(serial++),
                                                            {flavour.arch, k.num_warps, flavour.tensor_cores, flavour.num_stages});
  int32_t grid[3] = {int32_t(g.x), int32_t(g.y), int32_t(g.z)};
  simt::emulate_launch(kernel, grid, slots.data());
  bool host_ok = remove_guard(host, "the CPU backend"), emu_ok = remove_guard(emu, "the emulator");
  if (!host_ok || !emu_ok) return INFINITY;

  double worst = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    size_t n = host[i].bytes.size() / std::max(1, dtype_bytes(host[i].dtype));
    double elementwise = 0, largest = 0, largest_difference = 0;
    for (size_t j = 0; j < n; ++j) {
      double want = element(host[i], j), got = element(emu[i], j);
      if (std::isnan(want) || std::isnan(got)) {
        if (std::isnan(want) != std::isnan(got)) return INFINITY;
        continue;
      }
      elementwise = std::max(elementwise, std::fabs(want - got) / (1e-3 + std::fabs(want)));
      largest = std::max(largest, std::fabs(want));
      largest_difference = std::max(largest_difference, std::fabs(want - got));
    }
    const double normwise = largest > 0 ? largest_difference / largest : largest_difference;
    worst = std::max(worst, metric == Metric::Normwise ? normwise : elementwise);
  }
  return worst;
}

inline std::vector<float> random_f32(size_t n, std::mt19937 &rng, float lo = -3, float hi = 3) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float &x : v) x = d(rng);
  return v;
}

template <class T>
std::vector<T> random_of(size_t n, std::mt19937 &rng) {
  std::vector<T> v(n);
  for (T &x : v) {
    if constexpr (std::is_same_v<T, int8_t>) x = int8_t(std::uniform_int_distribution<int>(-128, 127)(rng));
    else x = T(std::uniform_real_distribution<float>(-1, 1)(rng));
  }
  return v;
}

}  // namespace emulator_test
