// made_rows_test.cpp - products of rows the step before them makes (Library::matmul_normed, matmul_swiglu): the norm, residual add and SwiGLU in the quantizer's launch against float64, and the fallback elsewhere
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/library.h"
#include "tests/kernels/int8_test_util.h"
#include "tests/kernels/library_test_util.h"
#include "tests/kernels/quantized_test_util.h"

namespace {
using namespace kernels_test;
using kdsl::kernels::WeightType;

enum class Step { RmsNorm, AddRmsNorm, Swiglu };

const char *name(Step s) {
  switch (s) {
    case Step::RmsNorm: return "rmsnorm";
    case Step::AddRmsNorm: return "add_rmsnorm";
    case Step::Swiglu: return "swiglu";
  }
  return "?";
}

// The rows the step makes, in float64 (x already updated for AddRmsNorm), rounded to f32: the
// rows a product of them reads.
std::vector<float> made_reference(Step step, const std::vector<float> &x, const std::vector<float> &other, const std::vector<float> &norm_w, int rows,
                                  int K, float eps) {
  std::vector<float> made(x.size());
  for (int r = 0; r < rows; ++r) {
    const size_t at = size_t(r) * size_t(K);
    if (step == Step::Swiglu) {
      for (int k = 0; k < K; ++k) {
        const double g = x[at + size_t(k)], u = other[at + size_t(k)];
        made[at + size_t(k)] = float(g / (1 + std::exp(-g)) * u);
      }
      continue;
    }
    double squares = 0;
    for (int k = 0; k < K; ++k) squares += double(x[at + size_t(k)]) * x[at + size_t(k)];
    const double inv_rms = 1 / std::sqrt(squares / K + eps);
    for (int k = 0; k < K; ++k) made[at + size_t(k)] = float(x[at + size_t(k)] * inv_rms * norm_w[size_t(k)]);
  }
  return made;
}

// N x K random weights of t: a block format's random blocks, or f16 / bf16 values in [-1, 1]
// (random bytes would hold NaNs and infinities there).
std::vector<uint8_t> random_weights(std::mt19937 &rng, WeightType t, int N, int K) {
  if (t != WeightType::F16 && t != WeightType::BF16) return random_quantized(rng, t, N, K);
  const std::vector<float> values = random_floats(rng, size_t(N) * size_t(K));
  std::vector<uint8_t> bytes(values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    const uint16_t h = t == WeightType::F16 ? kdsl::f32_to_f16_bits(values[i]) : kdsl::f32_to_bf16_bits(values[i]);
    std::memcpy(&bytes[2 * i], &h, 2);
  }
  return bytes;
}

// lib.matmul_normed / matmul_swiglu over `rows` rows of K against the float64 product of the
// reference's made rows with W as the kernels read it. Where the integer-dot products take the
// rows, the allowed error is their quantization's (int8_test_util.h: d_x / 2 per value times
// |w|, d_x from the made rows) with 1% on it for the made rows' own f32 rounding, which can move
// a block's scale; elsewhere the f32 product's rounding. AddRmsNorm leaves x + residual in x,
// to the bit.
void check_made_rows(kdsl::kernels::Library &lib, std::mt19937 &rng, Step step, WeightType t, int rows, int N, int K, bool int_dot, bool grouped = false) {
  CAPTURE(name(step));
  CAPTURE(std::string(kdsl::kernels::weight_type_info(t).name));
  CAPTURE(rows);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(grouped);
  const float eps = 1e-5f;
  std::vector<float> x = random_floats(rng, size_t(rows) * size_t(K), -2, 2), other = random_floats(rng, x.size(), -2, 2);
  const std::vector<float> norm_w = random_floats(rng, size_t(K), 0.5, 1.5), bias = random_floats(rng, size_t(N));
  const std::vector<uint8_t> w = random_weights(rng, t, N, K);
  std::vector<uint8_t> read = w;
  const int group = grouped ? lib.row_group(t, N) : 1;
  if (grouped) {
    REQUIRE(group > 1);
    lib.group_rows(w.data(), t, N, K, read.data());
  }
  std::vector<float> updated = x;
  if (step == Step::AddRmsNorm)
    for (size_t i = 0; i < x.size(); ++i) updated[i] = x[i] + other[i];
  const std::vector<float> made = made_reference(step, updated, other, norm_w, rows, K, eps);

  GuardedOutput out(size_t(rows) * size_t(N), -7.0f);
  switch (step) {
    case Step::RmsNorm:
      lib.matmul_normed(x.data(), nullptr, norm_w.data(), eps, read.data(), t, bias.data(), out.data(), rows, N, K, group, w.data());
      break;
    case Step::AddRmsNorm:
      lib.matmul_normed(x.data(), other.data(), norm_w.data(), eps, read.data(), t, bias.data(), out.data(), rows, N, K, group, w.data());
      break;
    case Step::Swiglu: lib.matmul_swiglu(x.data(), other.data(), read.data(), t, bias.data(), out.data(), rows, N, K, group, w.data()); break;
  }
  CHECK_MESSAGE(out.intact(), "wrote past its rows x N outputs");
  if (step == Step::AddRmsNorm) CHECK_MESSAGE(x == updated, "x after the residual add is not x + residual");
  else if (step == Step::RmsNorm) CHECK_MESSAGE(x == updated, "rmsnorm wrote x");

  const std::vector<float> wf = dequantized(t, w, N, K), got = out.values();
  const ReferenceProduct want = reference_matmul(made, wf, bias.data(), rows, N, K);
  std::vector<double> allowed(got.size());
  const ActivationBlocks ab = activation_blocks(t);
  const QuantizedRows xq = quantize_reference(made, rows, K, ab.block, ab.group);
  for (int r = 0; r < rows; ++r)
    for (int n = 0; n < N; ++n) {
      double quantization = 0;
      for (int k = 0; k < K; ++k)
        quantization += std::fabs(double(wf[size_t(n) * size_t(K) + size_t(k)])) * 0.5 * xq.d[(size_t(r) * size_t(K) + size_t(k)) / size_t(ab.block)];
      const size_t i = size_t(r) * size_t(N) + size_t(n);
      allowed[i] = (int_dot ? 1.01 * quantization : 0.0) + 2e-5 * want.scale[i];
    }
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(double(got[i]) - want.values[i]) <= allowed[i]) && bad++ < 3)
      FAIL_CHECK("output ", i, ": ", got[i], " against ", want.values[i], ", allowed ", allowed[i]);
  CHECK(bad == 0);
}

TEST_CASE("kernels: a decode product's norm, residual add or SwiGLU made in its quantizer's launch, every integer-dot format, as stored and grouped") {
  KDSL_TEST_RNG(rng);
  const auto formats = int_dot_formats();
  for (const kdsl::formats::WeightTypeInfo &info : formats) {
    const int block = info.block_elements;
    for (Step step : {Step::RmsNorm, Step::AddRmsNorm, Step::Swiglu}) {
      check_made_rows(library(), rng, step, info.type, 1, 37, 3 * block, true);
      check_made_rows(library(), rng, step, info.type, 3, 5, 2 * block, true);
      if (library().row_group(info.type, 64) > 1) check_made_rows(library(), rng, step, info.type, 1, 64, 2 * block, true, true);
    }
  }
  CHECK(formats.size() == 9);
}

TEST_CASE("kernels: products of made rows past the quantizer: a prefill's rows, dense weights and a Library without integer dots make them apart") {
  KDSL_TEST_RNG(rng);
  kdsl::kernels::Library f32_path(kdsl_test::cpu());
  f32_path.set_integer_dot_rows(0);
  for (Step step : {Step::RmsNorm, Step::AddRmsNorm, Step::Swiglu}) {
    // A prefill's rows through the byte-dot tiles where the format takes them (the quantizer
    // makes them there too), the rest through the f32 path.
    check_made_rows(library(), rng, step, WeightType::Q4_K, 40, 37, 256, int_dot_default_rows(WeightType::Q4_K) >= 40);
    check_made_rows(library(), rng, step, WeightType::Q8_0, 40, 37, 64, int_dot_default_rows(WeightType::Q8_0) >= 40);
    // The same over grouped weights, as the engine's prefill gives them: the tiles read W as
    // stored (w_stored) with the quantizer making the rows.
    for (WeightType t : {WeightType::Q4_K, WeightType::Q6_K, WeightType::IQ4_NL})
      if (library().row_group(t, 64) > 1) check_made_rows(library(), rng, step, t, 40, 64, 256, int_dot_default_rows(t) >= 40, true);
    check_made_rows(f32_path, rng, step, WeightType::Q4_0, 1, 37, 96, false);
    check_made_rows(f32_path, rng, step, WeightType::Q6_K, 2, 16, 256, false, f32_path.row_group(WeightType::Q6_K, 16) > 1);
    check_made_rows(library(), rng, step, WeightType::F16, 1, 37, 100, false);
    check_made_rows(library(), rng, step, WeightType::BF16, 3, 37, 100, false);
  }
}

TEST_CASE("kernels: made-row products refuse an output over x and a grouping W does not have, by name") {
  std::vector<float> x(256, 0.5f), norm_w(256, 1.0f), out(64);
  std::mt19937 rng(3);
  const std::vector<uint8_t> w = random_quantized(rng, WeightType::Q8_0, 16, 256);
  CHECK_THROWS_WITH_AS(library().matmul_normed(x.data(), nullptr, norm_w.data(), 1e-5f, w.data(), WeightType::Q8_0, nullptr, x.data() + 8, 1, 16, 256),
                       doctest::Contains("matmul_normed: out overlaps x"), kdsl::Error);
  CHECK_THROWS_WITH_AS(library().matmul_swiglu(x.data(), x.data(), w.data(), WeightType::Q8_0, nullptr, out.data(), 1, 16, 256, 4),
                       doctest::Contains("matmul_swiglu: W is grouped by 4 rows"), kdsl::Error);
  CHECK_THROWS_WITH_AS(library().matmul_swiglu(x.data(), x.data(), w.data(), WeightType::Q4_K, nullptr, out.data(), 1, 16, 100),
                       doctest::Contains("not a multiple of 256"), kdsl::Error);
}

}  // namespace
