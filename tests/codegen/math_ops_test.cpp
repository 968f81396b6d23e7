// math_ops_test.cpp - floor, ceil and pow (block-block, block-scalar, literals) against a double reference at ragged sizes
#include <kdsl/kdsl.h>

#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace math_ops_test {

constexpr int kBlock = 64;

// out[0, n): floor(x); out[n, 2n): ceil(x); out[2n, 3n): floor(x) + ceil(x * 0.5) (the
// literal takes x's type).
template <class T>
void rounding(Ptr<T> x, Ptr<T> out, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto m = offs < n;
  auto v = load(x + offs, m, 0);
  store(out + offs, floor(v), m);
  store(out + n + offs, ceil(v), m);
  store(out + 2 * n + offs, floor(v) + ceil(v * 0.5), m);
}

// out[0, n): a^b; out[n, 2n): a^e (a run-time scalar); out[2n, 3n): a^2.5 (a literal);
// out[3n, 4n): 2^b (a literal base); out[4n, 4n + 8 * 4): a broadcast [8, 1] ^ [1, 4].
template <class T>
void powers(Ptr<T> a, Ptr<T> b, Ptr<T> out, Scalar<T> e, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto m = offs < n;
  auto va = load(a + offs, m, 1.0);
  auto vb = load(b + offs, m, 1.0);
  store(out + offs, pow(va, vb), m);
  store(out + n + offs, pow(va, e), m);
  store(out + 2 * n + offs, pow(va, 2.5), m);
  store(out + 3 * n + offs, pow(2.0, vb), m);
  auto rows = expand_dims<1>(load(a + arange<8>()));
  auto cols = expand_dims<0>(load(b + arange<4>()));
  auto table = pow(rows, cols);  // [8, 4]
  store(out + 4 * n + expand_dims<1>(arange<8>()) * 4 + expand_dims<0>(arange<4>()), table, program_id(0) == 0);
}

template <class T>
void check_rounding(std::mt19937 &rng, int n) {
  CAPTURE(n);
  auto x = random_values<T>(rng, size_t(n), -300, 300);
  // Edges: halves, integers, -0, tiny values, NaN, infinities, and (in f32) values past 2^23,
  // which are integers already.
  const double edges[] = {-0.5, 0.5, -1.0, 2.0, -0.0, 1e-3, -1e-3, NAN, INFINITY, -INFINITY, 2.75, -2.25};
  for (size_t i = 0; i < std::size(edges); ++i) x[i] = to_storage<T>(edges[i]);
  if constexpr (std::is_same_v<T, f32>) x[std::size(edges)] = 16777217.0f * 2, x[std::size(edges) + 1] = -8388609.5f;
  HostArray<storage_t<T>> out(size_t(3 * n));
  compile<rounding<T>>(cpu())(grid(cdiv(n, kBlock)), x.data(), out.data(), n);
  auto in = [&](size_t i) { return as_double(x[i]); };
  auto got = [&](int k) { return [&, k](size_t i) { return as_double(out[size_t(k * n) + i]); }; };
  expect_close({"floor", 0, 0}, size_t(n), got(0), [&](size_t i) { return std::floor(in(i)); });
  expect_close({"ceil", 0, 0}, size_t(n), got(1), [&](size_t i) { return std::ceil(in(i)); });
  expect_close({"floor(x) + ceil(x * 0.5)", 0, 0}, size_t(n), got(2),
               [&](size_t i) { return round_as<T>(std::floor(in(i)) + std::ceil(round_as<T>(in(i) * 0.5))); });
  // -0.5 rounds up to -0: the sign survives.
  CHECK(std::signbit(as_double(out[size_t(n)])));
}

template <class T>
void check_powers(std::mt19937 &rng, int n) {
  CAPTURE(n);
  auto a = random_values<T>(rng, size_t(n), 0.05, 8);
  auto b = random_values<T>(rng, size_t(n), -3, 3);
  // C's powf edges: negative bases with integral and fractional exponents, zeros, NaN, inf.
  const double edges[][2] = {{-2, 3}, {-2, 2}, {-2, 0.5}, {0, -1}, {0, 0}, {NAN, 0}, {1, NAN}, {INFINITY, -1}, {-0.0, 3}, {4, 0.5}};
  for (size_t i = 0; i < std::size(edges); ++i) a[i + 8] = to_storage<T>(edges[i][0]), b[i + 8] = to_storage<T>(edges[i][1]);
  const double e = round_as<T>(-1.25);
  HostArray<storage_t<T>> out(size_t(4 * n + 32));
  compile<powers<T>>(cpu())(grid(cdiv(n, kBlock)), a.data(), b.data(), out.data(), e, n);
  // f32: powf is within an ulp or so; f16 / bf16: that result rounded once more.
  double rtol = std::is_same_v<T, f32> ? 2 * epsilon<T>() : epsilon<T>();
  double floor = std::is_same_v<T, f16> ? 0x1p-14 : 0x1p-126;
  auto in_a = [&](size_t i) { return as_double(a[i]); };
  auto in_b = [&](size_t i) { return as_double(b[i]); };
  auto got = [&](int k) { return [&, k](size_t i) { return as_double(out[size_t(k * n) + i]); }; };
  expect_close({"pow(a, b)", rtol, floor}, size_t(n), got(0), [&](size_t i) { return std::pow(in_a(i), in_b(i)); });
  expect_close({"pow(a, scalar)", rtol, floor}, size_t(n), got(1), [&](size_t i) { return std::pow(in_a(i), e); });
  expect_close({"pow(a, 2.5)", rtol, floor}, size_t(n), got(2), [&](size_t i) { return std::pow(in_a(i), 2.5); });
  expect_close({"pow(2, b)", rtol, floor}, size_t(n), got(3), [&](size_t i) { return std::pow(2.0, in_b(i)); });
  expect_close({"pow([8, 1], [1, 4])", rtol, floor}, 32, [&](size_t i) { return as_double(out[size_t(4 * n) + i]); },
               [&](size_t i) { return std::pow(in_a(i / 4), in_b(i % 4)); });
  CHECK(as_double(out[8]) == -8.0);
  CHECK(std::isnan(as_double(out[10])));
  CHECK(as_double(out[11]) == INFINITY);
  CHECK(as_double(out[12]) == 1.0);
  CHECK(as_double(out[13]) == 1.0);  // NaN^0
  CHECK(as_double(out[14]) == 1.0);  // 1^NaN
  CHECK(std::signbit(as_double(out[16])));  // (-0)^3 = -0
}

}  // namespace math_ops_test

TEST_CASE_TEMPLATE("codegen: floor and ceil round toward -inf and +inf, exactly, with NaN, infinities and -0 kept", T, f32, f16, bf16) {
  KDSL_TEST_RNG(rng);
  for (int n : {math_ops_test::kBlock * 4, math_ops_test::kBlock * 3 + 17}) math_ops_test::check_rounding<T>(rng, n);
}

TEST_CASE_TEMPLATE("codegen: pow of blocks, of a block and a scalar or literal, and broadcast, as C's powf", T, f32, f16, bf16) {
  KDSL_TEST_RNG(rng);
  for (int n : {math_ops_test::kBlock * 2, math_ops_test::kBlock + 45}) math_ops_test::check_powers<T>(rng, n);
}
