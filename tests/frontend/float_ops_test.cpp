// float_ops_test.cpp - f32, f16 and bf16 arithmetic, fma, min/max, where and comparisons against a host reference
#include <kdsl/kdsl.h>

#include <algorithm>
#include <functional>

#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace float_ops_test {

constexpr int kBlock = 64;
constexpr int kValueOps = 15;
constexpr int kMaskOps = 6;

// Result k of element i lands at out[k * n + i], comparison k at masks[k * n + i].
template <class T>
void float_ops(Ptr<T> a, Ptr<T> b, Ptr<T> c, Ptr<T> out, Ptr<boolean> masks, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto m = offs < n;
  auto x = load(a + offs, m);
  auto y = load(b + offs, m, 1.0);
  auto z = load(c + offs, m);
  int k = 0;
  auto put = [&](const auto &v) { store(out + (k++) * n + offs, v, m); };
  put(x + y), put(x - y), put(x * y), put(x / y), put(-x);
  put(abs(x)), put(min(x, y)), put(max(x, y)), put(minimum(x, 0.25f)), put(fma(x, y, z));
  put(where(x < y, x, z)), put(where(x > 0, x, 0.5)), put(x * 2.5 + 1), put(1 - x), put(sqrt(abs(x)));
  int j = 0;
  auto put_mask = [&](const auto &v) { store(masks + (j++) * n + offs, v, m); };
  put_mask(x < y), put_mask(x <= y), put_mask(x > y), put_mask(x >= y), put_mask(x == y), put_mask(x != y);
}

// The exact result of each op on the (already representable) inputs, rounded once to T.
template <class T>
std::vector<std::function<double(double, double, double)>> references() {
  auto r = [](double v) { return round_as<T>(v); };
  return {
      [=](double x, double y, double) { return r(x + y); },
      [=](double x, double y, double) { return r(x - y); },
      [=](double x, double y, double) { return r(x * y); },
      [=](double x, double y, double) { return r(x / y); },
      [=](double x, double, double) { return -x; },
      [=](double x, double, double) { return std::fabs(x); },
      [=](double x, double y, double) { return std::min(x, y); },
      [=](double x, double y, double) { return std::max(x, y); },
      [=](double x, double, double) { return std::min(x, 0.25); },
      [=](double x, double y, double z) { return r(std::fma(x, y, z)); },
      [=](double x, double y, double z) { return x < y ? x : z; },
      [=](double x, double, double) { return x > 0 ? x : 0.5; },
      [=](double x, double, double) { return r(r(x * 2.5) + 1); },
      [=](double x, double, double) { return r(1 - x); },
      [=](double x, double, double) { return r(std::sqrt(std::fabs(x))); },
  };
}

template <class T>
void check_float_ops(std::mt19937 &rng, int n) {
  using S = storage_t<T>;
  CAPTURE(n);
  auto a = random_values<T>(rng, size_t(n), -100, 100);
  auto b = random_values<T>(rng, size_t(n), -100, 100);
  auto c = random_values<T>(rng, size_t(n), -100, 100);
  // Special values: signed zeros, infinities, the smallest subnormal and normal numbers,
  // equal operands (comparisons), and a tiny product that rounds into the subnormals.
  const double tiny = std::is_same_v<T, f16> ? 0x1p-24 : std::is_same_v<T, bf16> ? 0x1p-133 : 0x1p-149;
  const double normal_min = std::is_same_v<T, f16> ? 0x1p-14 : 0x1p-126;
  const double specials[][2] = {{0.0, -0.0}, {-0.0, 1.0}, {INFINITY, 2.0}, {-INFINITY, -3.0}, {tiny, 0.5},
                                {normal_min, 0.75}, {-normal_min, normal_min}, {3.0, 3.0}, {1.0, INFINITY}, {5.5, -0.0}};
  for (size_t i = 0; i < std::size(specials); ++i) a[i] = to_storage<T>(specials[i][0]), b[i] = to_storage<T>(specials[i][1]);
  const S sentinel = to_storage<T>(-12345.0);
  std::vector<S> out(size_t(kValueOps) * size_t(n) + kBlock, sentinel);
  HostArray<bool> masks(size_t(kMaskOps) * size_t(n));

  auto kernel = compile<float_ops<T>>(cpu());
  kernel(grid(cdiv(n, kBlock)), a.data(), b.data(), c.data(), out.data(), masks.data(), n);

  const char *names[kValueOps] = {"+", "-", "*", "/", "neg", "abs", "min", "max", "minimum(x, 0.25)", "fma", "where(x<y, x, z)",
                                  "where(x>0, x, 0.5)", "x*2.5+1", "1-x", "sqrt(abs(x))"};
  auto refs = references<T>();
  for (int k = 0; k < kValueOps; ++k) {
    // fma rounds once in the reference; the kernel may round its f32 result again to f16/bf16.
    double rtol = k == 9 ? (std::is_same_v<T, f32> ? 1e-7 : epsilon<T>()) : 0;
    expect_close(
        {std::string("operator ") + names[k], rtol, 0x1p-126}, size_t(n), [&](size_t i) { return as_double(out[size_t(k * n) + i]); },
        [&](size_t i) { return refs[size_t(k)](as_double(a[i]), as_double(b[i]), as_double(c[i])); });
  }
  CHECK(std::all_of(out.end() - kBlock, out.end(), [&](S v) { return as_double(v) == as_double(sentinel); }));

  const std::function<bool(double, double)> mask_refs[kMaskOps] = {
      [](double x, double y) { return x < y; },  [](double x, double y) { return x <= y; }, [](double x, double y) { return x > y; },
      [](double x, double y) { return x >= y; }, [](double x, double y) { return x == y; }, [](double x, double y) { return x != y; }};
  for (int k = 0; k < kMaskOps; ++k) {
    INFO("comparison #", k);
    expect_close(
        {"comparison", 0, 0}, size_t(n), [&](size_t i) { return double(masks[size_t(k * n) + i]); },
        [&](size_t i) { return double(mask_refs[k](as_double(a[i]), as_double(b[i]))); });
  }
}

// Comparisons with NaN: ordered ones are false, != is true.
void nan_compare(Ptr<f32> a, Ptr<boolean> out) {
  auto x = load(a + arange<4>());
  auto nan = load(a + 4);
  store(out + arange<4>(), x < nan || x > nan || x == nan || x <= nan || x >= nan);
  store(out + 4 + arange<4>(), x != nan);
}

}  // namespace float_ops_test

TEST_CASE_TEMPLATE("frontend: float operators round like IEEE arithmetic in the element type", T, f32, f16, bf16) {
  KDSL_TEST_RNG(rng);
  for (int n : {float_ops_test::kBlock * 2, float_ops_test::kBlock * 2 + 7}) float_ops_test::check_float_ops<T>(rng, n);
}

TEST_CASE("frontend: comparisons with NaN") {
  float a[5] = {1.0f, -INFINITY, 0.0f, NAN, NAN};
  bool out[8] = {};
  compile<float_ops_test::nan_compare>(cpu())(grid(1), a, out);
  for (int i = 0; i < 4; ++i) CHECK_FALSE(out[i]);
  for (int i = 4; i < 8; ++i) CHECK(out[i]);
}
