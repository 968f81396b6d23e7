// fp8_test.cpp - the f8e4m3 element type: every code's value, f32 rounded to it, arithmetic rounded after each op, scalar arguments and dot, against references written from the format's definition
#include <kdsl/kdsl.h>

#include <cmath>
#include <limits>

#include "examples/matmul_fp8.h"
#include "tests/codegen/nvptx_test_kernels.h"
#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace fp8_test {

constexpr int kBlock = 64;

// Arithmetic on f8e4m3 blocks with an f8e4m3 scalar: x * s + y, each op rounded.
void scale_add(Ptr<const f8e4m3> x, Ptr<const f8e4m3> y, Scalar<f8e4m3> s, Ptr<f8e4m3> out, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto m = offs < n;
  store(out + offs, load(x + offs, m) * s + load(y + offs, m), m);
}

// The value of code c from the format's definition (OCP 8-bit floating point, E4M3): sign,
// exponent e (bias 7), mantissa m; e = 0 subnormal m 2^-9; S.1111.111 the NaN; no infinity.
double code_value(int c) {
  const int e = (c >> 3) & 15, m = c & 7;
  if (e == 15 && m == 7) return std::numeric_limits<double>::quiet_NaN();
  const double magnitude = e == 0 ? std::ldexp(m, -9) : std::ldexp(8 + m, e - 10);
  return c & 0x80 ? -magnitude : magnitude;
}

// The code f32 x rounds to: the nearest finite code by search (ties to the even code), with
// magnitudes past 448 saturating; NaN is 0x7F with x's sign.
int nearest_code(float x) {
  const int sign = std::signbit(x) ? 0x80 : 0;
  if (std::isnan(x)) return sign | 0x7f;
  const double a = std::min(std::fabs(double(x)), 448.0);
  int best = 0;
  for (int c = 1; c < 0x7f; ++c) {
    const double d = std::fabs(code_value(c) - a), best_d = std::fabs(code_value(best) - a);
    if (d < best_d || (d == best_d && c % 2 == 0)) best = c;
  }
  return sign | best;
}

// Row r of a ([.][K]) times the column b_at(k) gives, in float64; with `magnitude`, the sum of
// the products' magnitudes, which bounds the rounding of an f32 sum of them.
template <class A, class B>
double reference_dot(const A &a, size_t r, int K, B b_at, bool magnitude) {
  double sum = 0;
  for (size_t k = 0; k < size_t(K); ++k) {
    const double p = as_double(a[r * size_t(K) + k]) * b_at(k);
    sum += magnitude ? std::fabs(p) : p;
  }
  return sum;
}

}  // namespace fp8_test

using namespace fp8_test;

TEST_CASE("frontend: f8e4m3 codes decode to their values; f32 rounds to the nearest code, ties to even, saturating at 448, NaN kept") {
  KDSL_TEST_RNG(rng);
  std::vector<float> x;
  for (int c = 0; c < 256; ++c) x.push_back(float(code_value(c)));  // every code, NaNs included
  for (int c = 0; c < 0x7e; ++c) {                                   // between each pair of neighbours: the tie and either side of it
    const double lo = code_value(c), hi = code_value(c + 1), mid = (lo + hi) / 2;
    for (double v : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e9), lo + (hi - lo) / 3})
      x.push_back(float(v)), x.push_back(-float(v));
  }
  for (float v : {448.0f, 449.0f, 463.9f, 464.0f, 1e6f, INFINITY, -INFINITY, 0x1p-10f, 0x1.000002p-10f, 0x1p-12f, -0.0f, 1e-30f})
    x.push_back(v), x.push_back(-v);
  std::uniform_real_distribution<float> wide(-600.0f, 600.0f), narrow(-0.05f, 0.05f);
  for (int i = 0; i < 2000; ++i) x.push_back(i % 2 ? wide(rng) : narrow(rng));
  const int n = int(x.size());
  std::vector<float8_e4m3> rounded(x.size()), codes(x.size());
  std::vector<float> widened(x.size()), decoded(x.size());
  for (int i = 0; i < n; ++i) codes[size_t(i)] = float8_e4m3::from_bits(uint8_t(i % 256));
  compile<nvptx_test::f8e4m3_convert<kBlock>>(cpu())(grid(cdiv(n, kBlock)), x.data(), rounded.data(), widened.data(), codes.data(), decoded.data(), n);

  size_t bad = 0;
  for (int i = 0; i < n; ++i) {
    const float v = x[size_t(i)];
    const int want = nearest_code(v), got = rounded[size_t(i)].bits;
    const bool ok = std::isnan(v) ? (got & 0x7f) == 0x7f : got == want;
    const double back = widened[size_t(i)];
    const bool back_ok = std::isnan(v) ? std::isnan(back) : back == code_value(want) && std::signbit(back) == bool(want & 0x80);
    if ((!ok || !back_ok) && bad++ < 6) MESSAGE("x = " << v << ": code " << got << " (want " << want << "), widened " << back);
  }
  CHECK(bad == 0);
  bad = 0;
  for (int i = 0; i < n; ++i) {
    const double want = code_value(i % 256), got = decoded[size_t(i)];
    const bool ok = std::isnan(want) ? std::isnan(got) : got == want && std::signbit(got) == std::signbit(want);
    if (!ok && bad++ < 6) MESSAGE("code " << i % 256 << " decoded " << got << ", want " << want);
  }
  CHECK(bad == 0);
}

TEST_CASE("frontend: f8e4m3 arithmetic computes in f32 and rounds to f8e4m3 after each op; an f8e4m3 scalar argument is rounded on launch") {
  KDSL_TEST_RNG(rng);
  for (int n : {kBlock * 3, kBlock * 3 + 5}) {
    CAPTURE(n);
    auto x = random_values<f8e4m3>(rng, size_t(n), -20, 20), y = random_values<f8e4m3>(rng, size_t(n), -20, 20);
    std::vector<float8_e4m3> out(size_t(n) + kBlock, float8_e4m3(-3.0f));
    const float s = 0.3f;  // 0.3 is no E4M3 value: the launch rounds it to 0.3125
    compile<scale_add>(cpu())(grid(cdiv(n, kBlock)), x.data(), y.data(), s, out.data(), n);
    const double s8 = code_value(nearest_code(s));
    CHECK(s8 == 0.3125);
    auto r = [](double v) { return code_value(nearest_code(float(v))); };
    expect_close({"x * s + y", 0, 0}, size_t(n), [&](size_t i) { return as_double(out[i]); },
                 [&](size_t i) { return r(r(as_double(x[i]) * s8) + as_double(y[i])); });
    for (size_t i = size_t(n); i < out.size(); ++i) CHECK(out[i].bits == float8_e4m3(-3.0f).bits);  // nothing written past n
  }
}

TEST_CASE("kernels: an f8e4m3 dot accumulates exact products in f32, against a float64 reference at aligned and ragged sizes (CPU)") {
  KDSL_TEST_RNG(rng);
  auto kernel = compile<nvptx_test::tiled_matmul<f8e4m3, f32, 32, 32, 32>>(cpu());  // masked at every edge
  for (std::array<int, 3> shape : {std::array<int, 3>{64, 64, 64}, {70, 33, 100}, {1, 45, 7}}) {
    const int M = shape[0], N = shape[1], K = shape[2];
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    auto a = random_values<f8e4m3>(rng, size_t(M) * size_t(K), -8, 8), b = random_values<f8e4m3>(rng, size_t(K) * size_t(N), -8, 8);
    std::vector<float> c(size_t(M) * size_t(N), -1.0f);
    kernel(grid(cdiv(M, 32), cdiv(N, 32)), a.data(), b.data(), c.data(), M, N, K);
    // Each product is exact in f32 (4-bit significands); only the K - 1 f32 sums round.
    auto ref = [&](size_t i, bool magnitude) {
      return reference_dot(a, i / size_t(N), K, [&](size_t k) { return as_double(b[k * size_t(N) + i % size_t(N)]); }, magnitude);
    };
    expect_close_scaled("f8e4m3 dot", double(K) * 0x1p-24, c.size(), [&](size_t i) { return double(c[i]); }, [&](size_t i) { return ref(i, false); },
                        [](size_t) { return true; }, [&](size_t i) { return ref(i, true); });
  }
}

// examples/matmul_fp8.h on the CPU: A W^T scaled, out in bf16. The products are exact, the f32
// sums round (K 2^-24 of the sum of magnitudes), the bf16 store rounds once more (2^-9).
TEST_CASE("kernels: the fp8 GEMM example (C = scale * A W^T, bf16 out) against float64 at aligned and ragged sizes (CPU)") {
  KDSL_TEST_RNG(rng);
  auto kernel = compile<examples::matmul_fp8<bf16, 32, 32, 32>>(cpu());
  const float scale = 0.0625f;
  for (std::array<int, 3> shape : {std::array<int, 3>{64, 64, 64}, {50, 70, 96}, {1, 33, 16}}) {
    const int M = shape[0], N = shape[1], K = shape[2];
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    auto a = random_values<f8e4m3>(rng, size_t(M) * size_t(K), -16, 16), w = random_values<f8e4m3>(rng, size_t(N) * size_t(K), -16, 16);
    std::vector<bfloat16> c(size_t(M) * size_t(N));
    kernel(grid(cdiv(M, 32), cdiv(N, 32)), a.data(), w.data(), c.data(), M, N, K, scale);
    auto ref = [&](size_t i, bool magnitude) {
      return scale * reference_dot(a, i / size_t(N), K, [&](size_t k) { return as_double(w[(i % size_t(N)) * size_t(K) + k]); }, magnitude);
    };
    expect_close_scaled("fp8 GEMM", 0x1p-8 + double(K) * 0x1p-24, c.size(), [&](size_t i) { return double(float(c[i])); },
                        [&](size_t i) { return ref(i, false); }, [](size_t) { return true; }, [&](size_t i) { return ref(i, true); });
  }
}
