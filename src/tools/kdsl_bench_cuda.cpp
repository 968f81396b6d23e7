// kdsl_bench_cuda.cpp - kdsl-bench-cuda: GB/s and TFLOP/s of kdsl kernels on an NVIDIA GPU against a device copy and baselines
// Prints one table per run; never fails on a time. Baselines (torch.matmul, Triton's tutorial
// matmul; torch's scaled_dot_product_attention and a Triton flash attention of the tutorial's
// form) come from a JSON file tests/gpu/baselines.py writes where PyTorch/Triton are installed.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <span>
#include <string_view>

#include <kdsl/kdsl.h>

#include "examples/flash_attention.h"
#include "examples/matmul_descriptor.h"
#include "examples/matmul_fp8.h"
#include "examples/matmul_persistent.h"
#include "kernels/matmul_narrow.h"
#include "kernels/matvec.h"
#include "kernels/matvec_quantized.h"
#include "kernels/matvec_quantized_wide.h"
#include "kernels/matvec_wide.h"
#include "runtime/cuda/cuda_device.h"
#include "src/tools/example_kernels.h"

using namespace kdsl;

namespace {

template <int BM, int BN, int BK>
void matmul_bf16(Ptr<bf16> a, Ptr<bf16> b, Ptr<f32> c, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K) {
  auto rm = program_id(0) * BM + arange<BM>();
  auto rn = program_id(1) * BN + arange<BN>();
  auto rk = arange<BK>();
  auto row = expand_dims<1>(rm);
  auto col = expand_dims<0>(rn);
  auto acc = for_range(0, K, BK, zeros<f32, BM, BN>(), [&](auto k, auto acc) {
    auto ka = expand_dims<0>(k + rk);
    auto kb = expand_dims<1>(k + rk);
    return dot(load(a + row * K + ka, row < M && ka < K, 0), load(b + kb * N + col, kb < K && col < N, 0), acc);
  });
  store(c + row * N + col, acc, row < M && col < N);
}

// A timed tile of a matrix product: its shape, warps, pipeline stages and kernel; `form` says
// how it reads its tiles where that is not pointers and masks (" desc": tensor descriptors,
// TMA on Hopper; " persistent": the same on one program per multiprocessor, which walks the
// tiles: examples/matmul_persistent.h; " bf16 x": matmul_narrow's x already in bf16).
struct MatmulTile {
  int bm, bn, bk, warps, stages;
  detail::KernelSignature (*make)();
  const char *form = "";
  bool persistent() const { return std::string_view(form) == " persistent"; }
  detail::KernelSignature signature() const { return make(); }
  std::string label() const { return fmt::format("{}x{}x{} w{} s{}{}", bm, bn, bk, warps, stages, form); }
};

// The flash attention rows: examples/flash_attention.h over f16 heads of D = 128 at Triton's
// tutorial configuration (128 query rows, 64 keys a step, 8 warps) with 2 and 3 stages, and 128
// keys a step; causal and not.
struct FlashTile {
  int bm, bn, warps, stages;
  bool causal;
  detail::KernelSignature (*make)();
  bool descriptor = false;  // examples::flash_attention_descriptor: K and V through tensor descriptors (TMA on Hopper)
  std::string label() const { return fmt::format("{}x{} w{} s{}{}{}", bm, bn, warps, stages, causal ? " causal" : "", descriptor ? " desc" : ""); }
};
constexpr int kFlashD = 128;
const FlashTile kFlashTiles[] = {
    {128, 64, 8, 2, false, &detail::kernel_signature<examples::flash_attention<f16, 128, 64, kFlashD, false>>},
    {128, 64, 8, 3, false, &detail::kernel_signature<examples::flash_attention<f16, 128, 64, kFlashD, false>>},
    {128, 128, 8, 2, false, &detail::kernel_signature<examples::flash_attention<f16, 128, 128, kFlashD, false>>},
    {128, 64, 8, 2, true, &detail::kernel_signature<examples::flash_attention<f16, 128, 64, kFlashD, true>>},
    {128, 64, 8, 3, true, &detail::kernel_signature<examples::flash_attention<f16, 128, 64, kFlashD, true>>},
    {128, 64, 8, 2, false, &detail::kernel_signature<examples::flash_attention_descriptor<f16, 128, 64, kFlashD, false>>, true},
    {128, 64, 8, 3, false, &detail::kernel_signature<examples::flash_attention_descriptor<f16, 128, 64, kFlashD, false>>, true},
    {128, 64, 8, 3, true, &detail::kernel_signature<examples::flash_attention_descriptor<f16, 128, 64, kFlashD, true>>, true},
};

// The prefill rows: the Library's GPU prefill (matmul_narrow: f32 x rounded to bf16, bf16 W
// [N][K]) at a 512-token prompt's shapes of Llama-3-8B, by tile; " bf16 x": the engine's tile
// over x its norms and SwiGLU wrote in bf16 (Library::product_input_type), copied ahead as W is.
const MatmulTile kNarrowTiles[] = {
    {64, 128, 64, 4, 3, &detail::kernel_signature<kernels::matmul_narrow<bf16, 64, 128, 64, false, bf16>>, " bf16 x"},
    {128, 128, 64, 8, 3, &detail::kernel_signature<kernels::matmul_narrow<bf16, 128, 128, 64, false>>},
    {128, 128, 32, 4, 3, &detail::kernel_signature<kernels::matmul_narrow<bf16, 128, 128, 32, false>>},
    {64, 128, 64, 4, 3, &detail::kernel_signature<kernels::matmul_narrow<bf16, 64, 128, 64, false>>},
    {128, 64, 64, 4, 3, &detail::kernel_signature<kernels::matmul_narrow<bf16, 128, 64, 64, false>>},
    {64, 64, 64, 4, 3, &detail::kernel_signature<kernels::matmul_narrow<bf16, 64, 64, 64, false>>},
};

// The matmul rows: the small tile first, then larger ones of the kind Triton's tutorial
// autotunes over for 16-bit inputs (128x128x64 at 8 warps and 3 stages among them).
const MatmulTile kMatmulTiles[] = {
    {64, 64, 32, 4, 2, &detail::kernel_signature<matmul_bf16<64, 64, 32>>},
    {128, 128, 32, 4, 3, &detail::kernel_signature<matmul_bf16<128, 128, 32>>},
    {128, 128, 64, 8, 3, &detail::kernel_signature<matmul_bf16<128, 128, 64>>},
    {128, 256, 64, 8, 3, &detail::kernel_signature<matmul_bf16<128, 256, 64>>},
    {128, 64, 64, 4, 4, &detail::kernel_signature<matmul_bf16<128, 64, 64>>},
    {128, 128, 64, 8, 3, &detail::kernel_signature<examples::matmul_descriptor<bf16, f32, 128, 128, 64>>, " desc"},
    {128, 256, 64, 8, 3, &detail::kernel_signature<examples::matmul_descriptor<bf16, f32, 128, 256, 64>>, " desc"},
    {128, 128, 64, 8, 4, &detail::kernel_signature<examples::matmul_descriptor<bf16, f32, 128, 128, 64>>, " desc"},
    {128, 128, 64, 8, 3, &detail::kernel_signature<examples::matmul_persistent<bf16, f32, 128, 128, 64>>, " persistent"},
    {128, 256, 64, 8, 3, &detail::kernel_signature<examples::matmul_persistent<bf16, f32, 128, 256, 64>>, " persistent"},
};

// The fp8 rows (examples/matmul_fp8.h, bf16 out): Triton's and cuBLAS's fp8 tiles are 128 wide
// with BK 128 (a wgmma k step is 32 bytes either way).
const MatmulTile kFp8Tiles[] = {
    {128, 128, 128, 8, 3, &detail::kernel_signature<examples::matmul_fp8<bf16, 128, 128, 128>>, " fp8"},
    {128, 256, 128, 8, 3, &detail::kernel_signature<examples::matmul_fp8<bf16, 128, 256, 128>>, " fp8"},
    {128, 128, 64, 8, 4, &detail::kernel_signature<examples::matmul_fp8<bf16, 128, 128, 64>>, " fp8"},
};

// The decode rows: one bf16 matrix-vector product at Llama-3-8B's largest shapes (W far larger
// than the L2, so each launch streams it from memory), by the library's CPU-shaped matvec and
// by matvec_wide at several tiles.
struct MatvecTile {
  std::string label;
  int rows_per_program, warps;
  detail::KernelSignature (*make)();
};

const MatvecTile kMatvecTiles[] = {
    {"matvec 8x128 w4", 8, 4, &detail::kernel_signature<kernels::matvec<bf16, 8, 128, false, 128>>},
    {"wide 8x256 w4", 8, 4, &detail::kernel_signature<kernels::matvec_wide<bf16, 8, 256, false>>},
    {"wide 4x512 w4", 4, 4, &detail::kernel_signature<kernels::matvec_wide<bf16, 4, 512, false>>},
    {"wide 8x512 w4", 8, 4, &detail::kernel_signature<kernels::matvec_wide<bf16, 8, 512, false>>},
    {"wide 2x1024 w4", 2, 4, &detail::kernel_signature<kernels::matvec_wide<bf16, 2, 1024, false>>},
    {"wide 4x1024 w8", 4, 8, &detail::kernel_signature<kernels::matvec_wide<bf16, 4, 1024, false>>},
};

// The quantized decode rows over Q8_0 and Q4_0 blocks: the CPU-shaped matvec_quantized (8 rows
// a program, one block a step: the GPU's decode until 2026-12-04) and matvec_quantized_wide at
// several tiles (rows x blocks a step), to compare with the bf16 rows above.
template <class F>
std::vector<MatvecTile> quantized_tiles() {
  return {
      {"matvec 8x1", 8, 4, &detail::kernel_signature<kernels::matvec_quantized<F, 8, false, 512>>},
      {"wide 4x16", 4, 4, &detail::kernel_signature<kernels::matvec_quantized_wide<F, 4, 16, false>>},
      {"wide 4x32", 4, 4, &detail::kernel_signature<kernels::matvec_quantized_wide<F, 4, 32, false>>},
      {"wide 8x16", 8, 4, &detail::kernel_signature<kernels::matvec_quantized_wide<F, 8, 16, false>>},
      {"wide 2x64", 2, 4, &detail::kernel_signature<kernels::matvec_quantized_wide<F, 2, 64, false>>},
      {"wide 4x32 w8", 4, 8, &detail::kernel_signature<kernels::matvec_quantized_wide<F, 4, 32, false>>},
      {"wide 8x32 w8", 8, 8, &detail::kernel_signature<kernels::matvec_quantized_wide<F, 8, 32, false>>},
      {"wide 4x64 w8", 4, 8, &detail::kernel_signature<kernels::matvec_quantized_wide<F, 4, 64, false>>},
      {"wide 16x16 w8", 16, 8, &detail::kernel_signature<kernels::matvec_quantized_wide<F, 16, 16, false>>},
  };
}
// Blocks of format F for an [N x K] matrix: random quant bytes, every scale 1/64.
template <class F>
std::vector<uint8_t> quantized_weights(int N, int K) {
  std::vector<uint8_t> bytes(size_t(N) * (K / F::kBlockElements) * F::kBlockBytes);
  std::mt19937 rng(5);
  for (uint8_t &b : bytes) b = uint8_t(rng());
  const half scale(1.0f / 64);
  for (size_t at = 0; at < bytes.size(); at += F::kBlockBytes) std::memcpy(&bytes[at], &scale, sizeof scale);
  return bytes;
}

// y[i] = x[i] + y[i] written by hand in CUDA C++: the baseline a kdsl kernel should match.
const char *kHandAdd = R"(
extern "C" __global__ void hand_add(const float4 *x, const float4 *y, float4 *out, int n4) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n4) {
    float4 a = x[i], b = y[i];
    out[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
  }
}
)";

std::string cell(const nlohmann::json &baselines, const std::string &key) {
  if (!baselines.contains(key)) return "not installed";
  if (baselines[key].is_string()) return baselines[key].get<std::string>();
  return fmt::format("{:.1f}", baselines[key].get<double>());
}

// One benchmark row's outcome; a row that throws records its error and the others still run.
struct Result {
  std::string name, unit, error;
  double value = 0, ceiling = 0;  // ceiling: the device copy (GB/s) or torch.matmul (TFLOP/s); 0 where none
};

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kdsl-bench-cuda: kdsl kernels on an NVIDIA GPU (GB/s against a device-to-device copy; bf16 matmul TFLOP/s)"};
  std::string baselines_path, json_path;
  int repeats = 20;
  bool quick = false;
  app.add_option("--baselines", baselines_path, "JSON from tests/gpu/baselines.py (torch/triton TFLOP/s)");
  app.add_option("--repeats", repeats, "timed launches per kernel")->capture_default_str();
  app.add_option("--json", json_path, "also write the rows as JSON here");
  app.add_flag("--quick", quick, "small arrays (4 MiB) and one 512^3 matmul: a smoke run");
  CLI11_PARSE(app, argc, argv);
  nlohmann::json baselines = nlohmann::json::object();
  if (!baselines_path.empty()) {
    std::ifstream in(baselines_path);
    if (in) baselines = nlohmann::json::parse(in, nullptr, false);
    if (baselines.is_discarded() || !baselines.is_object()) baselines = nlohmann::json::object();
  }
  std::vector<Result> results;
  auto write_json = [&] {
    if (json_path.empty()) return;
    nlohmann::json rows = nlohmann::json::array();
    for (const Result &r : results)
      rows.push_back({{"name", r.name}, {"unit", r.unit}, {"value", r.value}, {"ceiling", r.ceiling}, {"error", r.error}});
    std::ofstream(json_path) << nlohmann::json{{"rows", rows}, {"baselines", baselines}}.dump(2) << "\n";
  };
  std::optional<Device> opened;
  try {
    opened = Device::cuda(0);
  } catch (const std::exception &e) {
    fmt::print(stderr, "kdsl-bench-cuda: {}\n", e.what());
    Result r;
    r.name = "open the GPU", r.error = e.what();
    results.push_back(r);
    write_json();
    return 1;
  }
  Device &device = *opened;
  auto &dev = static_cast<detail::CudaDevice &>(device.impl());  // for event timing and the device copy
  fmt::print("device: {}\n\n", dev.name());
  // Each row on its own: an exception (a compile error, an illegal address) is printed in its
  // row and the next row runs. A sticky device error fails the rows after it too, saying so.
  auto row = [&](const std::string &name, const std::string &unit, auto &&measure) {
    Result r;
    r.name = name, r.unit = unit;
    try {
      measure(r);
    } catch (const std::exception &e) {
      r.error = e.what();
    }
    if (!r.error.empty()) fmt::print("{:<30} FAILED: {}\n", name, r.error);
    else if (!(r.value > 0) || !std::isfinite(r.value)) fmt::print("{:<30} {:>10} (no time measured: the fake driver?)\n", name, "-");
    else if (r.ceiling > 0) fmt::print("{:<30} {:>10.1f} {:>14.1f} {:>7.0f}%\n", name, r.value, r.ceiling, 100 * r.value / r.ceiling);
    else fmt::print("{:<30} {:>10.1f}\n", name, r.value);
    std::fflush(stdout);
    results.push_back(r);
  };
  // Milliseconds a launch of `body`, over `times` launches after one to compile and warm up;
  // `timed` takes --repeats of them, the long matmul and attention rows 3.
  auto timed_times = [&](int times, auto &&body) {
    body();
    dev.synchronize();
    return dev.time_ms([&] {
             for (int i = 0; i < times; ++i) body();
           }) / times;
  };
  auto timed = [&](auto &&body) { return timed_times(repeats, body); };
  auto rate = [](double bytes, double ms) { return ms > 0 ? bytes / ms / 1e6 : 0.0; };
  auto find = [](const char *name) {
    for (auto &k : tools::example_kernels())
      if (k.name == name) return k;
    throw Error(std::string("no kernel ") + name);
  };
  const size_t n = quick ? size_t(1) << 20 : size_t(1) << 26;  // 64 Mi floats: 256 MiB per array
  double copy_gbs = 0;
  {
    std::optional<Buffer<float>> x, y, z;
    fmt::print("{:<30} {:>10} {:>14} {:>8}\n", "kernel", "GB/s", "copy GB/s", "ratio");
    row("device-to-device copy", "GB/s", [&](Result &r) {
      x.emplace(device, std::vector<float>(n, 1.0f)), y.emplace(device, std::vector<float>(n, 2.0f)), z.emplace(device, n);
      auto address = [](const Buffer<float> &b) { return cuda::CUdeviceptr(reinterpret_cast<uintptr_t>(b.data())); };
      r.value = copy_gbs = rate(2.0 * n * 4, timed([&] { dev.copy_on_device(address(*z), address(*x), n * 4); }));
      r.ceiling = copy_gbs;
    });
    auto need_buffers = [&] {
      if (!x || !y || !z) throw Error("the arrays could not be allocated (see the device-to-device copy row)");
    };
    row("vector add (f32)", "GB/s", [&](Result &r) {
      need_buffers();
      auto add = detail::make_kernel(device, find("vector_add").signature, {4, 2});
      std::vector<ArgValue> args = {make_arg(*x), make_arg(*y), make_arg(*z), make_arg(int32_t(n))};
      r.value = rate(3.0 * n * 4, timed([&] { detail::launch(*add, grid(int64_t(n) / 1024), args.data(), args.size()); }));
      r.ceiling = copy_gbs;
    });
    row("vector add (CUDA C++, NVRTC)", "GB/s", [&](Result &r) {
      need_buffers();
      auto hand = cuda_source(device, "hand_add", kHandAdd);
      r.value = rate(3.0 * n * 4, timed([&] { hand(grid(int64_t(n) / 4 / 256), threads(256), *x, *y, *z, int32_t(n / 4)); }));
      r.ceiling = copy_gbs;
    });
    const int cols = 1024, rows = int(n / cols);
    row("softmax (f32, 1024 cols)", "GB/s", [&](Result &r) {
      need_buffers();
      auto softmax = detail::make_kernel(device, find("softmax").signature, {4, 2});
      std::vector<ArgValue> args = {make_arg(*x), make_arg(*z), make_arg(cols), make_arg(cols)};
      r.value = rate(2.0 * n * 4, timed([&] { detail::launch(*softmax, grid(rows), args.data(), args.size()); }));
      r.ceiling = copy_gbs;
    });
    row("RMSNorm (f32, 1024 cols)", "GB/s", [&](Result &r) {
      need_buffers();
      auto rms = detail::make_kernel(device, find("rmsnorm").signature, {4, 2});
      std::vector<ArgValue> args = {make_arg(*x), make_arg(*y), make_arg(*y), make_arg(*z), make_arg(cols), make_arg(1e-5f)};
      r.value = rate(2.0 * n * 4, timed([&] { detail::launch(*rms, grid(rows), args.data(), args.size()); }));
      r.ceiling = copy_gbs;
    });
  }  // arrays freed

  // One decode row: the tile's kernel over N weight rows, the GB/s of `bytes` read (W, x and
  // out) against the device copy.
  auto decode_row = [&](const std::string &name, const MatvecTile &tile, const std::vector<ArgValue> &args, int N, double bytes) {
    row(name, "GB/s", [&](Result &r) {
      auto mv = detail::make_kernel(device, tile.make(), {tile.warps, 2});
      r.value = rate(bytes, timed([&] { detail::launch(*mv, grid(cdiv(N, tile.rows_per_program)), args.data(), args.size()); }));
      r.ceiling = copy_gbs;
    });
  };
  {
    fmt::print("\n{:<30} {:>10} {:>14} {:>8}\n", "bf16 decode matvec", "GB/s", "copy GB/s", "ratio");
    const std::pair<int, int> shapes[] = {{14336, 4096}, {4096, 14336}};
    for (auto [N, K] : shapes) {
      if (quick) N = 256, K = 512;
      Buffer<bfloat16> w(device, std::vector<bfloat16>(size_t(N) * K, bfloat16(0.5f)));
      Buffer<float> x(device, std::vector<float>(size_t(K), 1.0f)), out(device, size_t(N));
      std::vector<ArgValue> args = {make_arg(x), make_arg(w), make_arg(out), make_arg(out), make_arg(N), make_arg(K)};
      for (const MatvecTile &tile : kMatvecTiles) {
        decode_row(fmt::format("{}x{} {}", N, K, tile.label), tile, args, N, 2.0 * N * K + 4.0 * K + 4.0 * N);
        if (quick) break;
      }
      if (quick) break;
    }
  }

  fmt::print("\n{:<30} {:>10} {:>14} {:>14} {:>10}\n", "bf16 matmul (f32 out)", "TFLOP/s", "torch.matmul", "triton", "vs torch");
  std::vector<int> sizes = quick ? std::vector<int>{512} : std::vector<int>{4096, 8192};
  for (int size : sizes) {
    std::string torch = cell(baselines, fmt::format("torch_{}", size)), triton = cell(baselines, fmt::format("triton_{}", size));
    fmt::print("({}^3: torch.matmul {}, triton {})\n", size, torch, triton);
    size_t elems = size_t(size) * size;
    Buffer<bfloat16> a(device, std::vector<bfloat16>(elems, bfloat16(1.0f))), b(device, std::vector<bfloat16>(elems, bfloat16(1.0f)));
    Buffer<float> c(device, elems);
    std::vector<ArgValue> args = {make_arg(a), make_arg(b), make_arg(c), make_arg(size), make_arg(size), make_arg(size)};
    for (const MatmulTile &tile : kMatmulTiles) {
      if (quick && &tile != &kMatmulTiles[0]) break;
      row(fmt::format("{}^3 {}", size, tile.label()), "TFLOP/s", [&](Result &r) {
        auto mm = detail::make_kernel(device, tile.signature(), {tile.warps, tile.stages});
        const Grid g = tile.persistent() ? examples::persistent_grid(device, size, size, tile.bm, tile.bn) : grid(cdiv(size, tile.bm), cdiv(size, tile.bn));
        double ms = timed_times(3, [&] { detail::launch(*mm, g, args.data(), args.size()); });
        r.value = ms > 0 ? 2.0 * size * size * double(size) / ms / 1e9 : 0;
        std::string key = fmt::format("torch_{}", size);
        if (baselines.contains(key) && baselines[key].is_number()) r.ceiling = baselines[key].get<double>();
      });
    }
  }
  fmt::print("\n{:<30} {:>10} {:>14} {:>10}\n", "fp8 e4m3 matmul (bf16 out)", "TFLOP/s", "torch fp8", "vs torch");
  for (int size : sizes) {
    fmt::print("({}^3, A [M][K] by W [N][K]: torch._scaled_mm {})\n", size, cell(baselines, fmt::format("torch_fp8_{}", size)));
    size_t elems = size_t(size) * size;
    Buffer<float8_e4m3> a(device, std::vector<float8_e4m3>(elems, float8_e4m3(1.0f))), w(device, std::vector<float8_e4m3>(elems, float8_e4m3(0.5f)));
    Buffer<bfloat16> c(device, elems);
    std::vector<ArgValue> args = {make_arg(a), make_arg(w), make_arg(c), make_arg(size), make_arg(size), make_arg(size), make_arg(1.0f)};
    for (const MatmulTile &tile : kFp8Tiles) {
      if (quick && &tile != &kFp8Tiles[0]) break;
      row(fmt::format("{}^3 {}", size, tile.label()), "TFLOP/s", [&](Result &r) {
        auto mm = detail::make_kernel(device, tile.signature(), {tile.warps, tile.stages});
        double ms = timed_times(3, [&] { detail::launch(*mm, grid(cdiv(size, tile.bm), cdiv(size, tile.bn)), args.data(), args.size()); });
        r.value = ms > 0 ? 2.0 * size * size * double(size) / ms / 1e9 : 0;
        std::string key = fmt::format("torch_fp8_{}", size);
        if (baselines.contains(key) && baselines[key].is_number()) r.ceiling = baselines[key].get<double>();
      });
    }
  }
  {
    // Heads as Triton's tutorial times them (4 x 32); a causal pass counts half the products.
    fmt::print("\n{:<30} {:>10} {:>14} {:>8}\n", "flash attention (f16, D 128)", "TFLOP/s", "triton", "ratio");
    const int heads = quick ? 4 : 128;
    const float scale = 1.0f / std::sqrt(float(kFlashD));
    for (int seq : quick ? std::vector<int>{512} : std::vector<int>{4096, 8192}) {
      const size_t elems = size_t(heads) * seq * kFlashD;
      Buffer<half> q(device, std::vector<half>(elems, half(0.5f))), k(device, std::vector<half>(elems, half(0.25f))),
          v(device, std::vector<half>(elems, half(1.0f))), o(device, elems);
      std::vector<ArgValue> args = {make_arg(q), make_arg(k), make_arg(v), make_arg(o), make_arg(seq), make_arg(scale)};
      std::vector<ArgValue> descriptor_args = {make_arg(q), make_arg(k), make_arg(v), make_arg(o), make_arg(seq), make_arg(heads * seq), make_arg(scale)};
      for (bool causal : {false, true}) {
        const std::string shape = fmt::format("{}{}", causal ? "_causal_" : "_", seq);
        fmt::print("({} heads x {} x {}{}: torch sdpa {}, triton {})\n", heads, seq, kFlashD, causal ? ", causal" : "",
                   cell(baselines, "torch_sdpa" + shape), cell(baselines, "triton_flash" + shape));
        for (const FlashTile &tile : kFlashTiles) {
          if (tile.causal != causal) continue;
          row(fmt::format("{} {}", seq, tile.label()), "TFLOP/s", [&](Result &r) {
            auto attention = detail::make_kernel(device, tile.make(), {tile.warps, tile.stages});
            const std::vector<ArgValue> &given = tile.descriptor ? descriptor_args : args;
            double ms = timed_times(3, [&] { detail::launch(*attention, grid(cdiv(seq, tile.bm), heads), given.data(), given.size()); });
            double flops = 4.0 * heads * double(seq) * seq * kFlashD * (causal ? 0.5 : 1.0);
            r.value = ms > 0 ? flops / ms / 1e9 : 0;
            if (const std::string key = "triton_flash" + shape; baselines.contains(key) && baselines[key].is_number()) r.ceiling = baselines[key].get<double>();
          });
        }
      }
    }
  }
  {
    fmt::print("\n{:<30} {:>10} {:>14} {:>8}\n", "quantized decode", "GB/s", "copy GB/s", "ratio");
    const int N = quick ? 256 : 14336, K = quick ? 512 : 4096;
    Buffer<float> x(device, std::vector<float>(size_t(K), 1.0f)), out(device, size_t(N));
    auto measure = [&]<class F>(const char *type) {
      std::vector<uint8_t> bytes = quantized_weights<F>(N, K);
      Buffer<typename F::Quant::storage> w(device, std::span(reinterpret_cast<const typename F::Quant::storage *>(bytes.data()), bytes.size()));
      std::vector<ArgValue> args = {make_arg(x), make_arg(w), make_arg(out), make_arg(out), make_arg(N), make_arg(K)};
      for (const MatvecTile &tile : quantized_tiles<F>())
        decode_row(fmt::format("{}x{} {} {}", N, K, type, tile.label), tile, args, N, double(bytes.size()) + 4.0 * K + 4.0 * N);
    };
    measure.template operator()<kernels::Q8_0Format>("q8_0");
    measure.template operator()<kernels::Q4_0Format>("q4_0");
  }

  fmt::print("\n{:<30} {:>10}\n", "prefill (matmul_narrow, bf16)", "TFLOP/s");
  {
    const int M = quick ? 64 : 512, K = quick ? 256 : 4096;
    for (int N : {4096, 14336}) {
      if (quick) N = 128;
      Buffer<float> x(device, std::vector<float>(size_t(M) * K, 0.5f)), out(device, size_t(M) * N);
      Buffer<bfloat16> x16(device, std::vector<bfloat16>(size_t(M) * K, bfloat16(0.5f)));
      Buffer<bfloat16> w(device, std::vector<bfloat16>(size_t(N) * K, bfloat16(0.25f)));
      std::vector<ArgValue> args = {make_arg(x), make_arg(w), make_arg(out), make_arg(out), make_arg(M), make_arg(N), make_arg(K)};
      for (const MatmulTile &tile : kNarrowTiles) {
        row(fmt::format("{}x{}x{} {}", M, N, K, tile.label()), "TFLOP/s", [&](Result &r) {
          auto mm = detail::make_kernel(device, tile.signature(), {tile.warps, tile.stages});
          std::vector<ArgValue> a = args;
          if (std::string_view(tile.form) == " bf16 x") a[0] = make_arg(x16);
          double ms = timed([&] { detail::launch(*mm, grid(cdiv(M, tile.bm), cdiv(N, tile.bn)), a.data(), a.size()); });
          r.value = ms > 0 ? 2.0 * M * N * double(K) / ms / 1e9 : 0;
        });
        if (quick) break;
      }
      if (quick) break;
    }
  }
  fmt::print("\n(each matmul row is the kdsl dot path at the tile BMxBNxBK, warps w, pipeline stages s; torch.matmul is cuBLAS;\n"
             " Triton's tutorial kernel runs its own autotuned tiles)\n");
  write_json();
  bool any_failed = std::any_of(results.begin(), results.end(), [](const Result &r) { return !r.error.empty(); });
  return any_failed ? 1 : 0;
}
