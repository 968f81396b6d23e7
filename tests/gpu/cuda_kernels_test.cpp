// cuda_kernels_test.cpp - example and library kernels on an NVIDIA GPU against the CPU backend, through kdsl::compile's
// launch path (specialization, cache, cubin, cuLaunchKernel). Skipped, saying "skipped:", without a GPU; compiled and
// launched but not compared on the fake driver.
//
// Tolerances (tests/gpu/tolerance.h, tested on the CPU by tests/runtime/gpu_tolerance_test.cpp): per output array,
// max|gpu - cpu| / max|cpu| against a bound per op family: exact 0 (vector add, argmax), approximate math 2^-17
// (swiglu: ex2.approx), reduction 2^-15 (softmax, layer norm, RMSNorm: other summation orders plus rsqrt.approx /
// ex2.approx), tensor-core dot 2^-11 (f16 matmul, f32 accumulation in the tensor cores' order). NaN must meet NaN.
// A per-element relative error would fail correct kernels at elements near zero; this measure fails a wrong element.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <tuple>
#include <utility>

#include <kdsl/kdsl.h>

#include "src/tools/example_kernels.h"
#include "tests/gpu/gpu_test.h"
#include "tests/gpu/tolerance.h"

using namespace kdsl;
using namespace kdsl_test;

namespace cuda_test {

const Device *gpu() {
  static std::optional<Device> device = open_gpu();
  return device ? &*device : nullptr;
}

// n f16 values uniform in [-1, 1].
std::vector<half> random_halves(size_t n, std::mt19937 &rng) {
  std::vector<half> v(n);
  for (half &x : v) x = half(std::uniform_real_distribution<float>(-1, 1)(rng));
  return v;
}

// One kernel argument: a host array (copied to a Buffer on the GPU and back) or a scalar.
struct Arg {
  std::vector<uint8_t> host;  // empty for scalars
  ArgValue scalar;
  bool f32 = false;           // compared as floats with the tolerance; other arrays byte for byte
  bool f16 = false;           // the same, widened from f16
  static Arg array(std::vector<uint8_t> bytes, bool f32, bool f16 = false) { return {std::move(bytes), {}, f32, f16}; }
  template <class T>
  static Arg array(const std::vector<T> &v) {
    std::vector<uint8_t> bytes(v.size() * sizeof(T));
    std::memcpy(bytes.data(), v.data(), bytes.size());
    return array(std::move(bytes), std::is_same_v<T, float>, std::is_same_v<T, half>);
  }
  template <class T>
  static Arg value(T v) { return {{}, make_arg(v), false}; }
};

std::span<const float> floats(const std::vector<uint8_t> &bytes) { return {reinterpret_cast<const float *>(bytes.data()), bytes.size() / 4}; }
std::vector<float> widened_halves(const std::vector<uint8_t> &bytes) {
  std::vector<float> out(bytes.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = float(reinterpret_cast<const half *>(bytes.data())[i]);
  return out;
}

// Runs the kernel on the CPU device and on the GPU (with `num_stages` pipeline stages) with the
// same inputs, then checks every array argument: f32 and f16 arrays within `tolerance`, the
// others byte for byte.
void check_on_gpu(const tools::NamedKernel &k, const Grid &grid, std::vector<Arg> args, Tolerance tolerance, int num_stages = 2) {
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
  auto gpu_kernel = detail::make_kernel(dev, k.signature, {k.num_warps, num_stages});
  detail::launch(*gpu_kernel, grid, gpu_values.data(), gpu_values.size());
  dev.synchronize();
  if (skip_comparison_on_fake(dev)) return;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].host.empty()) continue;
    buffers[i].copy_to_host(args[i].host);
    INFO(k.name, ": argument ", i);
    if (args[i].f16) {
      std::vector<float> got = widened_halves(args[i].host), want = widened_halves(cpu_args[i].host);
      ArrayDifference d = compare_arrays(std::span<const float>(got), std::span<const float>(want));
      CHECK_MESSAGE(d.within(tolerance), d.text(tolerance));
      continue;
    }
    if (!args[i].f32) {
      CHECK(args[i].host == cpu_args[i].host);
      continue;
    }
    ArrayDifference d = compare_arrays(floats(args[i].host), floats(cpu_args[i].host));
    CHECK_MESSAGE(d.within(tolerance), d.text(tolerance));
  }
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
    check_on_gpu(kernel("vector_add"), grid(cdiv(n, 1024)), {Arg::array(x), Arg::array(y), Arg::array(out), Arg::value(n)}, kExact);
  }
  for (int cols : {1024, 1000, 77}) {
    CAPTURE(cols);
    int rows = 333;
    auto x = random_f32(size_t(rows) * cols, rng, 3);
    std::vector<float> out(x.size());
    check_on_gpu(kernel("softmax"), grid(rows), {Arg::array(x), Arg::array(out), Arg::value(cols), Arg::value(cols)}, kReduction);
    auto w = random_f32(size_t(cols), rng), b = random_f32(size_t(cols), rng);
    check_on_gpu(kernel("layer_norm"), grid(rows), {Arg::array(x), Arg::array(w), Arg::array(b), Arg::array(out), Arg::value(cols), Arg::value(1e-5f)},
                 kReduction);
    std::vector<float> none(x.size());
    check_on_gpu(kernel("rmsnorm"), grid(rows), {Arg::array(x), Arg::array(none), Arg::array(w), Arg::array(out), Arg::value(cols), Arg::value(1e-5f)},
                 kReduction);
    check_on_gpu(kernel("rmsnorm_residual"), grid(rows),
                 {Arg::array(x), Arg::array(none), Arg::array(w), Arg::array(out), Arg::value(cols), Arg::value(1e-5f)}, kReduction);
    check_on_gpu(kernel("softmax_online"), grid(rows), {Arg::array(x), Arg::value(cols)}, kReduction);
  }
}

TEST_CASE("gpu: matmul, swiglu and argmax match the CPU backend") {
  if (!gpu()) return;
  std::mt19937 rng(2);
  const int M = 257, N = 190, K = 301;
  const std::vector<half> a = random_halves(size_t(M) * K, rng), b = random_halves(size_t(K) * N, rng);
  std::vector<float> c(size_t(M) * N);
  check_on_gpu(kernel("matmul"), grid(cdiv(M, 32), cdiv(N, 32)), {Arg::array(a), Arg::array(b), Arg::array(c), Arg::value(M), Arg::value(N), Arg::value(K)},
               kTensorCoreDot);
  int n = 100000;
  auto g = random_f32(size_t(n), rng), u = random_f32(size_t(n), rng);
  std::vector<float> out(static_cast<size_t>(n));
  check_on_gpu(kernel("swiglu"), grid(cdiv(n, 1024)), {Arg::array(g), Arg::array(u), Arg::array(out), Arg::value(n)}, kApproxMath);
  auto x = random_f32(1000, rng);
  std::vector<int32_t> index(1);
  check_on_gpu(kernel("argmax"), grid(1), {Arg::array(x), Arg::array(index), Arg::value(1000)}, kExact);
}

// Triton's tutorial matmul tile: f16 A [M][K] and B [K][N], 128 x 128 x 64, 8 warps, 3 stages.
// On Hopper both operands are copied ahead (B read MN-major by wgmma) and each k step's wgmma
// group stays in flight into the next; elsewhere mma.sync. Ragged M, N and K.
template <int BM, int BN, int BK>
void tutorial_matmul(Ptr<f16> a, Ptr<f16> b, Ptr<f32> c, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K) {
  auto rm = expand_dims<1>(program_id(0) * BM + arange<BM>());
  auto rn = expand_dims<0>(program_id(1) * BN + arange<BN>());
  auto rk = arange<BK>();
  auto acc = for_range(0, K, BK, zeros<f32, BM, BN>(), [&](auto k0, auto acc) {
    auto ka = expand_dims<0>(k0 + rk), kb = expand_dims<1>(k0 + rk);
    return dot(load(a + rm * K + ka, rm < M && ka < K, 0), load(b + kb * N + rn, kb < K && rn < N, 0), acc);
  });
  store(c + rm * N + rn, acc, rm < M && rn < N);
}

TEST_CASE("gpu: Triton's tutorial matmul tile (both operands copied ahead, 3 stages) matches the CPU backend, aligned and ragged") {
  if (!gpu()) return;
  std::mt19937 rng(5);
  const tools::NamedKernel k = tools::named_kernel<tutorial_matmul<128, 128, 64>>("tutorial_matmul", 8);
  for (auto [M, N, K] : {std::tuple{256, 256, 512}, std::tuple{200, 136, 328}}) {
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    const std::vector<half> a = random_halves(size_t(M) * K, rng), b = random_halves(size_t(K) * N, rng);
    std::vector<float> c(size_t(M) * N);
    check_on_gpu(k, grid(cdiv(M, 128), cdiv(N, 128)), {Arg::array(a), Arg::array(b), Arg::array(c), Arg::value(M), Arg::value(N), Arg::value(K)},
                 kTensorCoreDot, 3);
  }
}

// The tutorial tile through tensor descriptors (examples/matmul_descriptor.h): on Hopper both
// tiles are copied by TMA from tensor maps the launcher encodes, one mbarrier a stage, and the
// edges read zeros from TMA itself; C goes out by TMA stores, which write nothing past the
// edges. K and N multiples of 16 (TMA's 16-byte row strides) but not of the tile, M ragged;
// N = 137 leaves B's and C's strides unaligned, so B falls back to masked loads and C to a
// masked store while A stays on TMA. 2 and 3 stages (3: the wgmma group in flight across k
// steps). Then the persistent form on 5 programs (each walks several tiles) and on one per SM.
TEST_CASE("gpu: the tutorial matmul through tensor descriptors (TMA on Hopper) matches the CPU backend, aligned and ragged") {
  if (!gpu()) return;
  std::mt19937 rng(6);
  const tools::NamedKernel k = tools::named_kernel<examples::matmul_descriptor<f16, f32, 128, 128, 64>>("matmul_descriptor_f32_out", 8);
  for (auto [M, N, K] : {std::tuple{256, 256, 512}, std::tuple{200, 144, 336}, std::tuple{130, 137, 96}})
    for (int stages : {2, 3}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CAPTURE(stages);
      const std::vector<half> a = random_halves(size_t(M) * K, rng), b = random_halves(size_t(K) * N, rng);
      std::vector<float> c(size_t(M) * N);
      check_on_gpu(k, grid(cdiv(M, 128), cdiv(N, 128)), {Arg::array(a), Arg::array(b), Arg::array(c), Arg::value(M), Arg::value(N), Arg::value(K)},
                   kTensorCoreDot, stages);
    }
  const tools::NamedKernel persistent = tools::named_kernel<examples::matmul_persistent<f16, f32, 128, 128, 64>>("matmul_persistent_f32_out", 8);
  for (auto [M, N, K] : {std::tuple{1024, 768, 512}, std::tuple{700, 656, 336}})
    for (int64_t programs : {int64_t(5), int64_t(gpu()->threads())}) {
      CAPTURE(M);
      CAPTURE(programs);
      const std::vector<half> a = random_halves(size_t(M) * K, rng), b = random_halves(size_t(K) * N, rng);
      std::vector<float> c(size_t(M) * N);
      check_on_gpu(persistent, grid(programs), {Arg::array(a), Arg::array(b), Arg::array(c), Arg::value(M), Arg::value(N), Arg::value(K)}, kTensorCoreDot, 3);
    }
}

// Flash attention at Triton's tutorial configuration (examples/flash_attention.h: 128 query
// rows, 64 keys a step, D = 128, 8 warps): on Hopper both dots on wgmma, K and V copied ahead by
// cp.async, Q staged once; the sequence aligned and ragged against both tiles.
TEST_CASE("gpu: flash attention matches the CPU backend, aligned and ragged sequences") {
  if (!gpu()) return;
  std::mt19937 rng(4);
  const int heads = 3, D = 128;
  for (int seq : {256, 333}) {
    CAPTURE(seq);
    auto halves = [&] {
      std::vector<half> v(size_t(heads) * seq * D);
      for (half &x : v) x = half(std::normal_distribution<float>(0, 1)(rng));
      return v;
    };
    std::vector<half> out(size_t(heads) * seq * D);
    check_on_gpu(kernel("flash_attention"), grid(cdiv(seq, 128), heads),
                 {Arg::array(halves()), Arg::array(halves()), Arg::array(halves()), Arg::array(out), Arg::value(seq), Arg::value(1.0f / std::sqrt(float(D)))},
                 kAttention16);
    // K and V through tensor descriptors over every head's rows (TMA on Hopper).
    check_on_gpu(kernel("flash_attention_descriptor"), grid(cdiv(seq, 128), heads),
                 {Arg::array(halves()), Arg::array(halves()), Arg::array(halves()), Arg::array(out), Arg::value(seq), Arg::value(heads * seq),
                  Arg::value(1.0f / std::sqrt(float(D)))},
                 kAttention16);
  }
}

// The products a GPU's Library runs (kernels/library_dense.h): decode by matvec_wide, 16-bit
// prefill by matmul_narrow on the tensor cores (over f32 x, and over x already in bf16), at
// aligned and ragged N and K.
TEST_CASE("gpu: the Library's GPU decode (matvec_wide) and prefill (matmul_narrow) products match the CPU backend, aligned and ragged") {
  if (!gpu()) return;
  std::mt19937 rng(3);
  auto bf16_weights = [&](size_t n) {
    std::vector<bfloat16> w(n);
    for (auto &v : w) v = bfloat16(std::uniform_real_distribution<float>(-1, 1)(rng));
    return w;
  };
  for (auto [N, K] : {std::pair{4096, 4096}, std::pair{1001, 1000}}) {
    CAPTURE(N);
    CAPTURE(K);
    auto x = random_f32(size_t(K), rng);
    std::vector<float> unread(static_cast<size_t>(N)), out(static_cast<size_t>(N));
    check_on_gpu(kernel("matvec_bf16_gpu_decode"), grid(cdiv(N, 4)),
                 {Arg::array(x), Arg::array(bf16_weights(size_t(N) * K)), Arg::array(unread), Arg::array(out), Arg::value(N), Arg::value(K)}, kReduction);
  }
  for (auto [M, N, K] : {std::tuple{256, 512, 1024}, std::tuple{77, 300, 200}}) {
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    auto x = random_f32(size_t(M) * K, rng);
    std::vector<float> unread(static_cast<size_t>(N)), out(static_cast<size_t>(M) * N);
    check_on_gpu(kernel("matmul_bf16_gpu_prefill"), grid(cdiv(M, 64), cdiv(N, 128)),
                 {Arg::array(x), Arg::array(bf16_weights(size_t(N) * K)), Arg::array(unread), Arg::array(out), Arg::value(M), Arg::value(N), Arg::value(K)},
                 kTensorCoreDot);
    // x as the engine's norms and SwiGLU write it over bf16 weights (Library::product_input_type).
    check_on_gpu(kernel("matmul_bf16_gpu_prefill_bf16_x"), grid(cdiv(M, 64), cdiv(N, 128)),
                 {Arg::array(bf16_weights(size_t(M) * K)), Arg::array(bf16_weights(size_t(N) * K)), Arg::array(unread), Arg::array(out), Arg::value(M),
                  Arg::value(N), Arg::value(K)},
                 kTensorCoreDot);
  }
}
