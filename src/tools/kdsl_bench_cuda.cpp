// kdsl_bench_cuda.cpp - kdsl-bench-cuda: GB/s and TFLOP/s of kdsl kernels on an NVIDIA GPU against a device copy and baselines
// Prints one table per run; never fails on a time. Baselines (torch.matmul, Triton's tutorial
// matmul) come from a JSON file tests/gpu/baselines.py writes where PyTorch/Triton are installed.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include <kdsl/kdsl.h>

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

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kdsl-bench-cuda: kdsl kernels on an NVIDIA GPU (GB/s against a device-to-device copy; bf16 matmul TFLOP/s)"};
  std::string baselines_path;
  int repeats = 20;
  app.add_option("--baselines", baselines_path, "JSON from tests/gpu/baselines.py (torch/triton TFLOP/s)");
  app.add_option("--repeats", repeats, "timed launches per kernel")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  nlohmann::json baselines = nlohmann::json::object();
  if (!baselines_path.empty()) {
    std::ifstream in(baselines_path);
    if (in) baselines = nlohmann::json::parse(in, nullptr, false);
    if (baselines.is_discarded()) baselines = nlohmann::json::object();
  }
  try {
    Device device = Device::cuda(0);
    auto &dev = static_cast<detail::CudaDevice &>(device.impl());  // for event timing and the device copy
    fmt::print("device: {}\n\n", dev.name());
    auto timed = [&](auto &&body) {
      body();  // compile and warm up
      dev.synchronize();
      return dev.time_ms([&] {
               for (int i = 0; i < repeats; ++i) body();
             }) / repeats;
    };
    const size_t n = size_t(1) << 26;  // 64 Mi floats: 256 MiB per array
    Buffer<float> x(device, std::vector<float>(n, 1.0f)), y(device, std::vector<float>(n, 2.0f)), z(device, n);
    auto address = [](const Buffer<float> &b) { return cuda::CUdeviceptr(reinterpret_cast<uintptr_t>(b.data())); };
    double copy_ms = timed([&] { dev.copy_on_device(address(z), address(x), n * 4); });
    double copy_gbs = 2.0 * n * 4 / copy_ms / 1e6;
    fmt::print("{:<28} {:>10} {:>14} {:>8}\n", "kernel", "GB/s", "copy GB/s", "ratio");
    auto row = [&](const char *name, double bytes, double ms) {
      double gbs = bytes / ms / 1e6;
      fmt::print("{:<28} {:>10.1f} {:>14.1f} {:>7.0f}%\n", name, gbs, copy_gbs, 100 * gbs / copy_gbs);
    };
    fmt::print("{:<28} {:>10.1f} {:>14.1f} {:>7.0f}%\n", "device-to-device copy", copy_gbs, copy_gbs, 100.0);
    auto find = [](const char *name) {
      for (auto &k : tools::example_kernels())
        if (k.name == name) return k;
      throw Error(std::string("no kernel ") + name);
    };
    {
      auto add = detail::make_kernel(device, find("vector_add").signature, {4, 2});
      std::vector<ArgValue> args = {make_arg(x), make_arg(y), make_arg(z), make_arg(int32_t(n))};
      row("vector add (f32)", 3.0 * n * 4, timed([&] { detail::launch(*add, grid(int64_t(n) / 1024), args.data(), args.size()); }));
      auto hand = cuda_source(device, "hand_add", kHandAdd);
      row("vector add (CUDA C++, NVRTC)", 3.0 * n * 4, timed([&] { hand(grid(int64_t(n) / 4 / 256), threads(256), x, y, z, int32_t(n / 4)); }));
    }
    const int cols = 1024, rows = int(n / cols);
    {
      auto softmax = detail::make_kernel(device, find("softmax").signature, {4, 2});
      std::vector<ArgValue> args = {make_arg(x), make_arg(z), make_arg(cols), make_arg(cols)};
      row("softmax (f32, 1024 cols)", 2.0 * n * 4, timed([&] { detail::launch(*softmax, grid(rows), args.data(), args.size()); }));
    }
    {
      auto rms = detail::make_kernel(device, find("rmsnorm").signature, {4, 2});
      std::vector<ArgValue> args = {make_arg(x), make_arg(y), make_arg(y), make_arg(z), make_arg(cols), make_arg(1e-5f)};
      row("RMSNorm (f32, 1024 cols)", 2.0 * n * 4, timed([&] { detail::launch(*rms, grid(rows), args.data(), args.size()); }));
    }
    x = y = z = Buffer<float>();  // freed

    fmt::print("\n{:<28} {:>10} {:>14} {:>14} {:>10}\n", "bf16 matmul (f32 out)", "TFLOP/s", "torch.matmul", "triton", "vs torch");
    using Matmul = detail::kernel_params<decltype(&matmul_bf16<64, 64, 32>)>;
    detail::KernelSignature sig{"matmul_bf16<64, 64, 32>", Matmul::types(), &Matmul::trace<matmul_bf16<64, 64, 32>>};
    auto mm = detail::make_kernel(device, sig, {4, 2});
    for (int size : {4096, 8192}) {
      size_t elems = size_t(size) * size;
      Buffer<bfloat16> a(device, std::vector<bfloat16>(elems, bfloat16(1.0f))), b(device, std::vector<bfloat16>(elems, bfloat16(1.0f)));
      Buffer<float> c(device, elems);
      std::vector<ArgValue> args = {make_arg(a), make_arg(b), make_arg(c), make_arg(size), make_arg(size), make_arg(size)};
      int saved = repeats;
      repeats = 3;
      double ms = timed([&] { detail::launch(*mm, grid(size / 64, size / 64), args.data(), args.size()); });
      repeats = saved;
      double tflops = 2.0 * size * size * double(size) / ms / 1e9;
      std::string torch = cell(baselines, fmt::format("torch_{}", size)), triton = cell(baselines, fmt::format("triton_{}", size));
      std::string ratio = baselines.contains(fmt::format("torch_{}", size)) && baselines[fmt::format("torch_{}", size)].is_number()
                              ? fmt::format("{:.0f}%", 100 * tflops / baselines[fmt::format("torch_{}", size)].get<double>())
                              : "-";
      fmt::print("{:<28} {:>10.1f} {:>14} {:>14} {:>10}\n", fmt::format("{}^3", size), tflops, torch, triton, ratio);
    }
    fmt::print("\n(matmul runs the FMA dot path; mma.sync/ldmatrix and cp.async pipelining are not lowered yet)\n");
    return 0;
  } catch (const std::exception &e) {
    fmt::print(stderr, "kdsl-bench-cuda: {}\n", e.what());
    return 1;
  }
}
