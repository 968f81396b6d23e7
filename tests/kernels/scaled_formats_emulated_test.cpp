// scaled_formats_emulated_test.cpp - the decode product over Q8_0, Q4_0, IQ4_NL and F8_E4M3 blocks through the GPU lowering (SIMT emulator, NVIDIA and AMD) against the CPU backend
#include <doctest/doctest.h>

#include "kernels/matvec_quantized.h"
#include "kernels/matvec_quantized_wide.h"
#include "tests/codegen/emulator_compare.h"
#include "tests/kernels/quantized_test_util.h"
#include "tests/test_util.h"

namespace scaled_formats_emulated_test {
using namespace emulator_test;
using kdsl::kernels::WeightType;

// matvec_quantized over N rows of K values (ragged N: the last program's rows are clamped and
// masked), with `nan_at` (a byte offset into the weights, or -1) set to E4M3's NaN code.
template <class F>
void check_decode(std::mt19937 &rng, const char *name, WeightType t, int n, int k, int nan_at, const Flavour &flavour) {
  CAPTURE(name);
  CAPTURE(n);
  CAPTURE(k);
  constexpr int kRows = 8;
  std::vector<uint8_t> w = kernels_test::random_quantized(rng, t, n, k);
  if (nan_at >= 0) w[size_t(nan_at)] = 0x7f;
  std::vector<Arg> args{array(random_f32(size_t(k), rng, -1, 1)), array(w), array(std::vector<float>(size_t(n), 0.0f)),
                        array(std::vector<float>(size_t(n), -7.0f)), value(int32_t(n)), value(int32_t(k))};
  const tools::NamedKernel kernel = tools::named_kernel<kernels::matvec_quantized<F, kRows, false>>(name, 4);
  // f32 sums whose lanes are added in another order there: an output that cancels to near zero
  // differs in its last bits far above its own size (KDSL_TEST_SEED=1913048616, the wide
  // product: want 2.041e-4, got 2.023e-4, 1.5e-3 elementwise against compare's 1e-3 floor), so
  // the difference is measured against the largest output (Metric::Normwise); a misplaced or
  // misdecoded element moves an output by a sizeable fraction of that.
  CHECK(compare(kernel, grid(cdiv(n, kRows)), args, flavour, Metric::Normwise) <= 1e-4);
}

// matvec_quantized_wide (a GPU's decode) on the CPU backend against the float64 product of the
// reference dequantizer's weights, then through the GPU lowering against the CPU backend. N = 13
// leaves the last 4-row program ragged; K = 96 (3 blocks) is one masked 2-block step after a
// whole one, 256 two whole steps of 4 blocks.
template <class F>
void check_decode_wide(std::mt19937 &rng, const char *name, WeightType t, int n, int k, bool with_bias, const Flavour &flavour) {
  CAPTURE(name);
  CAPTURE(n);
  CAPTURE(k);
  constexpr int kRows = 4, kBlocks = 2;
  std::vector<uint8_t> w = kernels_test::random_quantized(rng, t, n, k);
  std::vector<float> wf = kernels_test::dequantized(t, w, n, k), x = random_f32(size_t(k), rng, -1, 1), bias = random_f32(size_t(n), rng, -1, 1);
  std::vector<float> out(size_t(n) + 1, -7.0f);  // one guard value past N
  auto run = [&]<bool B>() {
    auto kernel = kdsl::compile<kernels::matvec_quantized_wide<F, kRows, kBlocks, B>>(kdsl_test::cpu());
    kernel(grid(cdiv(n, kRows)), x.data(), reinterpret_cast<const typename F::Quant::storage *>(w.data()), bias.data(), out.data(), n, k);
    std::vector<Arg> args{array(x), array(w), array(bias), array(std::vector<float>(size_t(n), -7.0f)), value(int32_t(n)), value(int32_t(k))};
    const tools::NamedKernel named = tools::named_kernel<kernels::matvec_quantized_wide<F, kRows, kBlocks, B>>(name, 4);
    CHECK(compare(named, grid(cdiv(n, kRows)), args, flavour, Metric::Normwise) <= 1e-4);  // as check_decode says
  };
  if (with_bias) run.template operator()<true>();
  else run.template operator()<false>();
  double scale = 0;
  std::vector<double> want(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    double s = with_bias ? double(bias[size_t(r)]) : 0.0;
    for (int c = 0; c < k; ++c) s += double(wf[size_t(r) * size_t(k) + size_t(c)]) * double(x[size_t(c)]);
    want[size_t(r)] = s, scale = std::max(scale, std::fabs(s));
  }
  for (int r = 0; r < n; ++r) {
    CAPTURE(r);
    CHECK(std::fabs(double(out[size_t(r)]) - want[size_t(r)]) <= 1e-5 * std::max(1.0, scale));
  }
  CHECK(out[size_t(n)] == -7.0f);
}

// matvec_quantized_wide_fused in the engine's three forms (the norm before the product with a
// bias, the residual add after it, the normed gate, up and SwiGLU over 2N rows), through the
// GPU lowering against the CPU backend; the CPU backend's engine-level check is
// engine_synthetic_test's GPU-forms case, against float64.
template <class F, bool BIAS, bool NORMED, bool ADD, bool SWIGLU>
void check_decode_fused(std::mt19937 &rng, const char *name, WeightType t, int n, int k, const Flavour &flavour) {
  CAPTURE(name);
  CAPTURE(n);
  CAPTURE(k);
  constexpr int kRows = 4, kBlocks = 2;
  std::vector<uint8_t> w = kernels_test::random_quantized(rng, t, SWIGLU ? 2 * n : n, k);
  std::vector<Arg> args{array(random_f32(size_t(k), rng, -1, 1)), array(random_f32(size_t(k), rng, -1, 1)), array(w),
                        array(random_f32(size_t(n), rng, -1, 1)), array(random_f32(size_t(n), rng, -1, 1)), value(int32_t(n)),
                        value(int32_t(k)), value(1e-5f)};
  const tools::NamedKernel named = tools::named_kernel<kernels::matvec_quantized_wide_fused<F, kRows, kBlocks, BIAS, NORMED, ADD, SWIGLU>>(name, 4);
  // As check_decode says; SwiGLU's silu(g) * u multiplies two sums that each backend adds in
  // its own order, and where the product is near 0 the comparison's relative measure (its
  // floor is 1e-3) magnifies their f32 rounding: 2.5e-3 at KDSL_TEST_SEED=1417373821 and
  // 6.9e-3 at KDSL_TEST_SEED=3954294899, on both emulated targets. A wrong block, scale or row
  // is off by far more.
  CHECK(compare(named, grid(cdiv(n, kRows)), args, flavour) <= (SWIGLU ? 1e-2 : 1e-3));
}

}  // namespace scaled_formats_emulated_test

using namespace scaled_formats_emulated_test;

TEST_CASE("emulated: the decode product over Q8_0, Q4_0, IQ4_NL and F8_E4M3 blocks matches the CPU backend, ragged N, F8's NaN code") {
  KDSL_TEST_RNG(rng);
  const Flavour flavour = each_emulated_target();
  check_decode<kernels::Q8_0Format>(rng, "q8_0_decode", WeightType::Q8_0, 13, 96, -1, flavour);
  check_decode<kernels::Q4_0Format>(rng, "q4_0_decode", WeightType::Q4_0, 16, 64, -1, flavour);
  check_decode<kernels::IQ4_NLFormat>(rng, "iq4_nl_decode", WeightType::IQ4_NL, 13, 96, -1, flavour);
  check_decode<kernels::F8_E4M3Format>(rng, "f8_e4m3_decode", WeightType::F8_E4M3, 13, 96, -1, flavour);
  check_decode<kernels::F8_E4M3Format>(rng, "f8_e4m3_nan", WeightType::F8_E4M3, 9, 64, 3 * 68 + 2 + 5, flavour);  // row 3's 6th value
}

TEST_CASE("emulated: a GPU's wide decode product over Q8_0, Q4_0, IQ4_NL and F8_E4M3 blocks, ragged N and K, with and without bias") {
  KDSL_TEST_RNG(rng);
  const Flavour flavour = each_emulated_target();
  check_decode_wide<kernels::Q8_0Format>(rng, "q8_0_decode_wide", WeightType::Q8_0, 13, 96, false, flavour);
  check_decode_wide<kernels::Q8_0Format>(rng, "q8_0_decode_wide", WeightType::Q8_0, 8, 256, true, flavour);
  check_decode_wide<kernels::Q4_0Format>(rng, "q4_0_decode_wide", WeightType::Q4_0, 13, 96, true, flavour);
  check_decode_wide<kernels::Q4_0Format>(rng, "q4_0_decode_wide", WeightType::Q4_0, 16, 256, false, flavour);
  check_decode_wide<kernels::IQ4_NLFormat>(rng, "iq4_nl_decode_wide", WeightType::IQ4_NL, 13, 96, false, flavour);
  check_decode_wide<kernels::F8_E4M3Format>(rng, "f8_e4m3_decode_wide", WeightType::F8_E4M3, 13, 96, true, flavour);
}

TEST_CASE("emulated: a GPU's fused decode over Q8_0 and Q4_0 blocks (norm and bias, residual add, gate-up-SwiGLU) matches the CPU backend") {
  KDSL_TEST_RNG(rng);
  const Flavour flavour = each_emulated_target();
  check_decode_fused<kernels::Q8_0Format, true, true, false, false>(rng, "q8_0_normed", WeightType::Q8_0, 13, 96, flavour);
  check_decode_fused<kernels::Q4_0Format, false, false, true, false>(rng, "q4_0_add", WeightType::Q4_0, 13, 96, flavour);
  check_decode_fused<kernels::Q8_0Format, false, true, false, true>(rng, "q8_0_swiglu", WeightType::Q8_0, 9, 128, flavour);
  check_decode_fused<kernels::Q4_0Format, false, true, false, true>(rng, "q4_0_swiglu", WeightType::Q4_0, 9, 96, flavour);
}
