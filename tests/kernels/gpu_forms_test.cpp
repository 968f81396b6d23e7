// gpu_forms_test.cpp - the kernels a GPU's Library takes (matvec_wide, matmul_narrow, rope_heads): the CPU backend against scalar references, and the GPU lowering (SIMT emulator) against the CPU backend
#include <doctest/doctest.h>

#include <cmath>

#include "kernels/matmul_narrow.h"
#include "kernels/matvec_wide.h"
#include "kernels/rope.h"
#include "tests/codegen/emulator_compare.h"
#include "tests/kernels/library_test_util.h"

namespace gpu_forms_test {
using namespace kdsl;
using namespace kernels_test;
using emulator_test::Arg;
using emulator_test::Flavour;

// Weights rounded to T, and the rounded values back as floats for the reference.
template <class T>
std::pair<std::vector<typename T::storage>, std::vector<float>> rounded(std::mt19937 &rng, size_t n) {
  auto f = random_floats(rng, n);
  std::vector<typename T::storage> w(n);
  for (size_t i = 0; i < n; ++i) w[i] = typename T::storage(f[i]), f[i] = float(w[i]);
  return {w, f};
}

template <class T, int BN, int BK>
void check_matvec_wide(std::mt19937 &rng, int N, int K, bool with_bias, const Flavour &flavour) {
  CAPTURE(std::string(T::text));
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(with_bias);
  auto x = random_floats(rng, size_t(K));
  auto [w, wf] = rounded<T>(rng, size_t(N) * K);
  auto bias = random_floats(rng, size_t(N));
  ReferenceProduct ref = reference_matmul(x, wf, with_bias ? bias.data() : nullptr, 1, N, K);
  GuardedOutput out(size_t(N), -7.0f);
  auto run = [&]<bool B>() {
    auto k = kdsl::compile<kernels::matvec_wide<T, BN, BK, B>>(kdsl_test::cpu());
    k(grid(cdiv(N, BN)), x.data(), w.data(), bias.data(), out.data(), N, K);
    std::vector<Arg> args{emulator_test::array(x), emulator_test::array(w), emulator_test::array(bias),
                          emulator_test::array(std::vector<float>(size_t(N), -7.0f)), emulator_test::value(int32_t(N)), emulator_test::value(int32_t(K))};
    auto named = tools::named_kernel<kernels::matvec_wide<T, BN, BK, B>>("matvec_wide", 4);
    // f32 sums in another order there: an output that cancels to near zero differs in its last
    // bits against compare's floor (seed 3290160757: 1.3e-4, the same float operations as when
    // the bound was set), as the other emulated comparisons' 1e-3 allows; a misplaced element
    // is off by O(1).
    CHECK(emulator_test::compare(named, grid(cdiv(N, BN)), args, flavour) <= 1e-3);
  };
  if (with_bias) run.template operator()<true>();
  else run.template operator()<false>();
  expect_close_scaled("matvec_wide", out.values(), ref.values, ref.scale, 1e-5);
  CHECK_MESSAGE(out.intact(), "matvec_wide wrote past its N outputs");
}

// matvec_wide_fused in the engine's three forms: the norm before the product (with a bias),
// the residual add after it, and the normed gate, up and SwiGLU (W of 2N rows). The CPU
// backend against float64 (rmsnorm(x), the products, then the add or silu(gate) * up), the
// emulated GPU lowering against the CPU backend.
enum class Fused { NormBias, Add, NormSwiglu };

template <class T, int BN, int BK, Fused MODE>
void check_matvec_wide_fused(std::mt19937 &rng, int N, int K, const Flavour &flavour) {
  CAPTURE(std::string(T::text));
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(int(MODE));
  constexpr bool kBias = MODE == Fused::NormBias, kNormed = MODE != Fused::Add, kAdd = MODE == Fused::Add, kSwiglu = MODE == Fused::NormSwiglu;
  const int rows = kSwiglu ? 2 * N : N;  // W's rows
  const float eps = 1e-5f;
  auto x = random_floats(rng, size_t(K)), norm_w = random_floats(rng, size_t(K)), bias = random_floats(rng, size_t(N));
  auto start = random_floats(rng, size_t(N));  // out's values before (an add adds to them)
  auto [w, wf] = rounded<T>(rng, size_t(rows) * K);
  std::vector<float> y = x;
  if (kNormed) {
    double squares = 0;
    for (float v : x) squares += double(v) * v;
    const double inv_rms = 1.0 / std::sqrt(squares / K + eps);
    for (int k = 0; k < K; ++k) y[size_t(k)] = float(double(x[size_t(k)]) * inv_rms * norm_w[size_t(k)]);
  }
  ReferenceProduct ref = reference_matmul(y, wf, kBias ? bias.data() : nullptr, 1, rows, K);
  std::vector<double> want(static_cast<size_t>(N)), scale(static_cast<size_t>(N));
  for (int n = 0; n < N; ++n) {
    double v = ref.values[size_t(n)], s = ref.scale[size_t(n)];
    if (kAdd) v += start[size_t(n)], s += std::fabs(start[size_t(n)]);
    if (kSwiglu) {
      const double g = v, u = ref.values[size_t(N + n)];
      v = g / (1 + std::exp(-g)) * u, s = std::max(1.0, s) * std::max(1.0, ref.scale[size_t(N + n)]);
    }
    want[size_t(n)] = v, scale[size_t(n)] = s;
  }
  GuardedOutput out(size_t(N), -7.0f);
  for (int n = 0; n < N; ++n) out.data()[n] = start[size_t(n)];
  constexpr auto kKernel = kernels::matvec_wide_fused<T, BN, BK, kBias, kNormed, kAdd, kSwiglu>;
  kdsl::compile<kKernel>(kdsl_test::cpu())(grid(cdiv(N, BN)), x.data(), norm_w.data(), w.data(), bias.data(), out.data(), N, K, eps);
  std::vector<Arg> args{emulator_test::array(x),     emulator_test::array(norm_w),       emulator_test::array(w),
                        emulator_test::array(bias),  emulator_test::array(start),        emulator_test::value(int32_t(N)),
                        emulator_test::value(int32_t(K)), emulator_test::value(eps)};
  // f32 sums in another order there; SwiGLU multiplies two of them, so an output near zero
  // differs in its last bits against compare's floor (seed 929390664: 1.7e-4), as the
  // tensor-core and quantized comparisons' 1e-3 allows; a misplaced element is off by O(1).
  CHECK(emulator_test::compare(tools::named_kernel<kKernel>("matvec_wide_fused", 4), grid(cdiv(N, BN)), args, flavour) <= 1e-3);
  expect_close_scaled("matvec_wide_fused", out.values(), want, scale, 1e-5);  // scale: sums of magnitudes
  CHECK_MESSAGE(out.intact(), "matvec_wide_fused wrote past its N outputs");
}

// matmul_narrow rounds x to T: the reference multiplies the rounded x, so only the f32
// accumulation's order separates them. Tiles of 64 rows and more also run on Hopper's
// warpgroup MMA (sm_90a, emulated), as the GPU prefill's 64 x 128 x 64 does on an H200.
template <class T, int BM = 32, int BN = 32, int BK = 32>
void check_matmul_narrow(std::mt19937 &rng, int M, int N, int K, bool with_bias, const Flavour &flavour) {
  CAPTURE(std::string(T::text));
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  auto x = random_floats(rng, size_t(M) * K);
  std::vector<float> x_rounded(x.size());
  for (size_t i = 0; i < x.size(); ++i) x_rounded[i] = float(typename T::storage(x[i]));
  auto [w, wf] = rounded<T>(rng, size_t(N) * K);
  auto bias = random_floats(rng, size_t(N));
  ReferenceProduct ref = reference_matmul(x_rounded, wf, with_bias ? bias.data() : nullptr, M, N, K);
  GuardedOutput out(size_t(M) * N, -7.0f);
  auto run = [&]<bool B>() {
    auto k = kdsl::compile<kernels::matmul_narrow<T, BM, BN, BK, B>>(kdsl_test::cpu());
    k(grid(cdiv(M, BM), cdiv(N, BN)), x.data(), w.data(), bias.data(), out.data(), M, N, K);
    std::vector<Arg> args{emulator_test::array(x), emulator_test::array(w), emulator_test::array(bias),
                          emulator_test::array(std::vector<float>(size_t(M) * N, -7.0f)), emulator_test::value(int32_t(M)),
                          emulator_test::value(int32_t(N)), emulator_test::value(int32_t(K))};
    auto named = tools::named_kernel<kernels::matmul_narrow<T, BM, BN, BK, B>>("matmul_narrow", 4);
    for (bool tensor_cores : {false, true}) {
      if (tensor_cores && flavour.arch != "sm_80") continue;  // mma.sync is emulated for NVIDIA only
      if (BM >= 64 && flavour.arch != "sm_80") continue;      // the FMA path's operand copies outgrow gfx942's 64 KiB of LDS
      CAPTURE(tensor_cores);
      Flavour f = flavour;
      f.tensor_cores = tensor_cores;
      // mma.sync sums each k step in its own order: sums that cancel to near zero differ in
      // their last bits (simt_emulator_test.cpp's tensor-core bound); a misplaced element is off by O(1).
      CHECK(emulator_test::compare(named, grid(cdiv(M, BM), cdiv(N, BN)), args, f) <= (tensor_cores ? 1e-3 : 1e-4));
    }
    if (flavour.arch == "sm_80" && BM >= 64) CHECK(emulator_test::compare(named, grid(cdiv(M, BM), cdiv(N, BN)), args, {"sm_90a", true, 3}) <= 1e-3);
  };
  if (with_bias) run.template operator()<true>();
  else run.template operator()<false>();
  expect_close_scaled("matmul_narrow", out.values(), ref.values, ref.scale, 1e-5);
  CHECK_MESSAGE(out.intact(), "matmul_narrow wrote past its M x N outputs");
}

}  // namespace gpu_forms_test

using namespace gpu_forms_test;

TEST_CASE("kernels: matvec_wide (a GPU's decode) against the float64 product, aligned and ragged N and K, f32 / f16 / bf16, on the CPU and emulated") {
  KDSL_TEST_RNG(rng);
  const Flavour flavour = emulator_test::each_emulated_target();
  check_matvec_wide<f32, 4, 512>(rng, 16, 1024, false, flavour);
  check_matvec_wide<f16, 4, 512>(rng, 13, 1000, true, flavour);
  check_matvec_wide<bf16, 4, 512>(rng, 7, 300, false, flavour);  // K under one step: the masked step alone
  check_matvec_wide<bf16, 4, 128>(rng, 9, 640, true, flavour);
}

TEST_CASE("kernels: matvec_wide_fused (a GPU's decode with the norm before, the residual add after, or gate, up and SwiGLU) against float64, on the CPU and emulated") {
  KDSL_TEST_RNG(rng);
  const Flavour flavour = emulator_test::each_emulated_target();
  check_matvec_wide_fused<bf16, 4, 512, Fused::NormBias>(rng, 13, 1000, flavour);
  check_matvec_wide_fused<bf16, 4, 512, Fused::Add>(rng, 13, 1000, flavour);
  check_matvec_wide_fused<bf16, 8, 256, Fused::NormSwiglu>(rng, 13, 1000, flavour);
  check_matvec_wide_fused<f32, 4, 128, Fused::NormBias>(rng, 8, 256, flavour);    // whole steps only
  check_matvec_wide_fused<f16, 4, 128, Fused::Add>(rng, 5, 100, flavour);         // the masked step alone
  check_matvec_wide_fused<f32, 4, 128, Fused::NormSwiglu>(rng, 6, 100, flavour);
}

TEST_CASE("kernels: matmul_narrow (a GPU's 16-bit prefill) against the float64 product of the rounded x, aligned and ragged, f16 / bf16, on the CPU and emulated") {
  KDSL_TEST_RNG(rng);
  const Flavour flavour = emulator_test::each_emulated_target();
  check_matmul_narrow<bf16>(rng, 64, 64, 128, false, flavour);
  check_matmul_narrow<f16>(rng, 37, 45, 100, true, flavour);
  check_matmul_narrow<bf16>(rng, 5, 33, 40, true, flavour);
  check_matmul_narrow<bf16, 64, 128, 64>(rng, 100, 200, 192, true, flavour);  // the GPU prefill's tile
  check_matmul_narrow<f16, 64, 128, 64>(rng, 64, 128, 128, false, flavour);
}

TEST_CASE("kernels: rope_heads (a GPU's rope, a program per head) rotates q and k as rope does, adjacent pairs and NeoX, ragged head_dim") {
  KDSL_TEST_RNG(rng);
  const Flavour flavour = emulator_test::each_emulated_target();
  for (bool neox : {false, true}) {
    for (int head_dim : {64, 48}) {
      CAPTURE(neox);
      CAPTURE(head_dim);
      const int rows = 3, n_heads = 4, n_kv_heads = 2, pos0 = 11;
      auto q = random_floats(rng, size_t(rows) * n_heads * head_dim), k = random_floats(rng, size_t(rows) * n_kv_heads * head_dim);
      std::vector<float> inv_freq(size_t(head_dim / 2));
      for (int i = 0; i < head_dim / 2; ++i) inv_freq[size_t(i)] = float(std::pow(10000.0, -2.0 * i / head_dim));
      auto q_want = q, k_want = k, q_got = q, k_got = k;
      auto check = [&]<bool NEOX>() {
        kdsl::compile<kernels::rope<32, NEOX>>(kdsl_test::cpu())(grid(rows), q_want.data(), k_want.data(), inv_freq.data(), n_heads, n_kv_heads,
                                                                   head_dim, pos0, 1.0f);
        auto heads = kdsl::compile<kernels::rope_heads<32, NEOX>>(kdsl_test::cpu());
        heads(grid(rows, n_heads + n_kv_heads), q_got.data(), k_got.data(), inv_freq.data(), n_heads, n_kv_heads, head_dim, pos0, 1.0f);
        std::vector<Arg> args{emulator_test::array(q),
                              emulator_test::array(k),
                              emulator_test::array(inv_freq),
                              emulator_test::value(int32_t(n_heads)),
                              emulator_test::value(int32_t(n_kv_heads)),
                              emulator_test::value(int32_t(head_dim)),
                              emulator_test::value(int32_t(pos0)),
                              emulator_test::value(1.0f)};
        CHECK(emulator_test::compare(tools::named_kernel<kernels::rope_heads<32, NEOX>>("rope_heads", 4), grid(rows, n_heads + n_kv_heads), args,
                                     flavour) <= 1e-5);
      };
      if (neox) check.template operator()<true>();
      else check.template operator()<false>();
      CHECK(q_got == q_want);  // the same f32 operations per element
      CHECK(k_got == k_want);
    }
  }
}

TEST_CASE("kernels: Library::matvec_fused refuses types it has no kernel for and calls it cannot fuse, naming them; a GPU's dispatch runs it") {
  using kdsl::kernels::Library;
  using kdsl::kernels::WeightType;
  using After = Library::AfterProduct;
  std::vector<float> x(64, 0.5f), norm(64, 1.0f), out(8, 0.0f), bias(8, 0.25f);
  std::vector<uint16_t> w(8 * 64, 0x3f80);  // bf16 1.0
  Library lib(kdsl_test::cpu());
  // The CPU keeps its own decode kernels: no fused form, said with the type and the device.
  CHECK_FALSE(lib.fuses_norm_and_add(WeightType::BF16));
  auto fused = [&](const float *norm_w, const float *b, After after) {
    lib.matvec_fused(x.data(), norm_w, 1e-5f, w.data(), WeightType::BF16, b, out.data(), after, 8, 64);
  };
  std::string text = kdsl_test::error_text([&] { fused(norm.data(), nullptr, After::Store); });
  CHECK(kdsl_test::contains(text, "matvec_fused"));
  CHECK(kdsl_test::contains(text, "bf16"));
  lib.set_gpu_forms(true);
  CHECK(lib.fuses_norm_and_add(WeightType::BF16));
  CHECK(lib.fuses_norm_and_add(WeightType::Q8_0));
  CHECK_FALSE(lib.fuses_norm_and_add(WeightType::Q4_K));  // no wide GPU kernel for the k-quants yet
  text = kdsl_test::error_text([&] { fused(nullptr, bias.data(), After::AddToOut); });
  CHECK(kdsl_test::contains(text, "bias"));
  text = kdsl_test::error_text([&] { fused(norm.data(), nullptr, After::AddToOut); });
  CHECK(kdsl_test::contains(text, "one of the two"));
  // A norm then the product: every row reads rmsnorm(x) ~ 1 (eps 1e-5 against mean(x^2) 0.25)
  // at each of the 64 columns, times 1.0, plus the bias.
  fused(norm.data(), bias.data(), After::Store);
  for (float v : out) CHECK(v == doctest::Approx(64.25f).epsilon(1e-4));
  // The residual add: out += W . x = 64 * 0.5.
  fused(nullptr, nullptr, After::AddToOut);
  for (float v : out) CHECK(v == doctest::Approx(96.25f).epsilon(1e-4));
}
