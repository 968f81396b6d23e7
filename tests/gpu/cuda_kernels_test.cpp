// cuda_kernels_test.cpp - example and library kernels on an NVIDIA GPU against the CPU backend
// (skipped with a message where no driver or GPU is present; tests/gpu/run.sh runs them on one).
// UNTESTED on a GPU: written and compiled on a machine without one; here every case skips.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>

#include <kdsl/kdsl.h>

#include "src/tools/example_kernels.h"

using namespace kdsl;

namespace cuda_test {

const Device *gpu() {
  static std::optional<Device> device = []() -> std::optional<Device> {
    try {
      return Device::cuda(0);
    } catch (const Error &e) {
      MESSAGE("no CUDA device: ", e.what());
      return std::nullopt;
    }
  }();
  return device ? &*device : nullptr;
}

// One kernel argument: a host array (copied to a Buffer on the GPU and back) or a scalar.
struct Arg {
  std::vector<uint8_t> host;  // empty for scalars
  ArgValue scalar;
  static Arg array(std::vector<uint8_t> bytes) { return {std::move(bytes), {}}; }
  template <class T>
  static Arg array(const std::vector<T> &v) {
    std::vector<uint8_t> bytes(v.size() * sizeof(T));
    std::memcpy(bytes.data(), v.data(), bytes.size());
    return array(std::move(bytes));
  }
  template <class T>
  static Arg value(T v) { return {{}, make_arg(v)}; }
};

// Runs the kernel on the CPU device and on the GPU (through the same launch path as
// kdsl::compile: specialization, cache, cubin, cuLaunchKernel) with the same inputs; returns
// the largest relative error between the two over every output array (compared as f32 when
// `f32_arrays`, else bytewise).
double run_both(const tools::NamedKernel &k, const Grid &grid, std::vector<Arg> args, bool f32_arrays = true) {
  std::vector<Arg> cpu_args = args;
  std::vector<ArgValue> cpu_values, gpu_values;
  for (Arg &a : cpu_args) cpu_values.push_back(a.host.empty() ? a.scalar : make_arg(static_cast<void *>(a.host.data())));
  auto cpu_kernel = detail::make_kernel(Device::cpu(), k.signature, {k.num_warps, 2});
  detail::launch(*cpu_kernel, grid, cpu_values.data(), cpu_values.size());

  const Device &dev = *gpu();
  std::vector<Buffer<uint8_t>> buffers;
  for (Arg &a : args) {
    buffers.emplace_back();
    if (a.host.empty()) {
      gpu_values.push_back(a.scalar);
      continue;
    }
    buffers.back() = Buffer<uint8_t>(dev, std::span<const uint8_t>(a.host));
    ArgValue v = make_arg(static_cast<void *>(buffers.back().data()));  // untyped: the kernel's parameter says the type
    v.on_device = true;
    gpu_values.push_back(v);
  }
  auto gpu_kernel = detail::make_kernel(dev, k.signature, {k.num_warps, 2});
  detail::launch(*gpu_kernel, grid, gpu_values.data(), gpu_values.size());
  dev.synchronize();
  double worst = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].host.empty()) continue;
    buffers[i].copy_to_host(args[i].host);
    if (!f32_arrays) {
      if (args[i].host != cpu_args[i].host) worst = 1;
      continue;
    }
    const float *g = reinterpret_cast<const float *>(args[i].host.data());
    const float *c = reinterpret_cast<const float *>(cpu_args[i].host.data());
    for (size_t j = 0; j < args[i].host.size() / 4; ++j) {
      if (std::isnan(g[j]) != std::isnan(c[j])) return 1;
      if (!std::isnan(c[j])) worst = std::max(worst, double(std::fabs(g[j] - c[j]) / (1e-6 + std::fabs(c[j]))));
    }
  }
  return worst;
}

const tools::NamedKernel &kernel(const std::string &name) {
  static const std::vector<tools::NamedKernel> all = tools::example_kernels();
  for (const auto &k : all)
    if (k.name == name) return k;
  throw std::runtime_error(name);
}

std::vector<float> random_f32(size_t n, std::mt19937 &rng, float scale = 1) {
  std::normal_distribution<float> d(0, scale);
  std::vector<float> v(n);
  for (float &x : v) x = d(rng);
  return v;
}

}  // namespace cuda_test

using namespace cuda_test;

TEST_CASE("gpu: vector add, softmax, layer norm, rmsnorm match the CPU backend at aligned and ragged sizes") {
  if (!gpu()) return;
  std::mt19937 rng(1);
  for (int n : {1 << 20, 1000003}) {
    CAPTURE(n);
    auto x = random_f32(size_t(n), rng), y = random_f32(size_t(n), rng);
    std::vector<float> out(static_cast<size_t>(n));
    CHECK(run_both(kernel("vector_add"), grid(cdiv(n, 1024)), {Arg::array(x), Arg::array(y), Arg::array(out), Arg::value(n)}) <= 1e-6);
  }
  for (int cols : {1024, 1000, 77}) {
    CAPTURE(cols);
    int rows = 333;
    auto x = random_f32(size_t(rows) * cols, rng, 3);
    std::vector<float> out(x.size());
    CHECK(run_both(kernel("softmax"), grid(rows), {Arg::array(x), Arg::array(out), Arg::value(cols), Arg::value(cols)}) <= 1e-5);
    auto w = random_f32(size_t(cols), rng), b = random_f32(size_t(cols), rng);
    CHECK(run_both(kernel("layer_norm"), grid(rows), {Arg::array(x), Arg::array(w), Arg::array(b), Arg::array(out), Arg::value(cols), Arg::value(1e-5f)}) <= 1e-4);
    std::vector<float> none(x.size());
    CHECK(run_both(kernel("rmsnorm"), grid(rows), {Arg::array(x), Arg::array(none), Arg::array(w), Arg::array(out), Arg::value(cols), Arg::value(1e-5f)}) <= 1e-4);
    CHECK(run_both(kernel("rmsnorm_residual"), grid(rows), {Arg::array(x), Arg::array(none), Arg::array(w), Arg::array(out), Arg::value(cols), Arg::value(1e-5f)}) <= 1e-4);
    CHECK(run_both(kernel("softmax_online"), grid(rows), {Arg::array(x), Arg::value(cols)}) <= 1e-5);
  }
}

TEST_CASE("gpu: matmul, swiglu and argmax match the CPU backend") {
  if (!gpu()) return;
  std::mt19937 rng(2);
  const int M = 257, N = 190, K = 301;
  std::vector<half> a(size_t(M) * K), b(size_t(K) * N);
  for (auto &v : a) v = half(std::uniform_real_distribution<float>(-1, 1)(rng));
  for (auto &v : b) v = half(std::uniform_real_distribution<float>(-1, 1)(rng));
  std::vector<float> c(size_t(M) * N);
  CHECK(run_both(kernel("matmul"), grid(cdiv(M, 32), cdiv(N, 32)), {Arg::array(a), Arg::array(b), Arg::array(c), Arg::value(M), Arg::value(N), Arg::value(K)}) <=
        1e-4);
  int n = 100000;
  auto g = random_f32(size_t(n), rng), u = random_f32(size_t(n), rng);
  std::vector<float> out(static_cast<size_t>(n));
  CHECK(run_both(kernel("swiglu"), grid(cdiv(n, 1024)), {Arg::array(g), Arg::array(u), Arg::array(out), Arg::value(n)}) <= 1e-5);
  auto x = random_f32(1000, rng);
  std::vector<int32_t> index(1);
  CHECK(run_both(kernel("argmax"), grid(1), {Arg::array(x), Arg::array(index), Arg::value(1000)}, false) == 0);
}
