// int_ops_test.cpp - integer arithmetic, bit, shift, comparison and logical operators against a host reference
#include <kdsl/kdsl.h>

#include <algorithm>
#include <functional>

#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace int_ops_test {

constexpr int kBlock = 64;
constexpr int kValueOps = 19;
constexpr int kMaskOps = 11;

// Every integer operator applied to a, b (b != 0) and shift amounts s; result k of element i
// lands at out[k * n + i], boolean results likewise in masks.
template <class T>
void int_ops(Ptr<T> a, Ptr<T> b, Ptr<T> s, Ptr<T> out, Ptr<boolean> masks, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto m = offs < n;
  auto x = load(a + offs, m);
  auto y = load(b + offs, m, 1);
  auto sh = load(s + offs, m);
  int k = 0;
  auto put = [&](const auto &v) { store(out + (k++) * n + offs, v, m); };
  put(x + y), put(x - y), put(x * y), put(x / y), put(x % y);
  put(x & y), put(x | y), put(x ^ y), put(x << sh), put(x >> sh);
  put(-x), put(~x), put(min(x, y)), put(max(x, y)), put(abs(x));
  put(x * 3 + 5), put(100 - x), put(x / 7 + x % 7), put(cdiv(x, 7));
  int c = 0;
  auto put_mask = [&](const auto &v) { store(masks + (c++) * n + offs, v, m); };
  put_mask(x < y), put_mask(x <= y), put_mask(x > y), put_mask(x >= y), put_mask(x == y), put_mask(x != y);
  put_mask(x < y && y > 0), put_mask(x < y || x == 0), put_mask(!(x < y)), put_mask((x < y) ^ (y < 0)), put_mask(x == x);
}

// Wrapping arithmetic as the kernel's fixed-width integers do it.
template <class S>
S wrap(uint64_t v) {
  return S(v);
}

template <class S>
bool negative(S x) {
  if constexpr (std::is_signed_v<S>) return x < 0;
  else return false;
}

template <class T>
void check_int_ops(std::mt19937 &rng, int n) {
  using S = storage_t<T>;
  constexpr int bits = int(sizeof(S)) * 8;
  constexpr S lowest = std::numeric_limits<S>::min();
  CAPTURE(n);
  auto a = random_full_range<T>(rng, size_t(n));
  auto b = random_full_range<T>(rng, size_t(n));
  auto s = random_values<T>(rng, size_t(n), 0, bits - 1);
  // Edge values in both operands: extremes, zero, one, all ones. b avoids 0 and the one
  // overflowing division (lowest / -1), which are undefined.
  const S edges[] = {lowest, std::numeric_limits<S>::max(), S(0), S(1), S(-1)};
  for (size_t i = 0; i < 5; ++i) a[i] = edges[i], b[i + 5] = edges[i], a[i + 10] = b[i + 10] = edges[i];
  for (size_t i = 0; i < size_t(n); ++i) {
    if (b[i] == 0 || (std::is_signed_v<S> && a[i] == lowest && b[i] == S(-1))) b[i] = 3;
  }
  const S sentinel = S(0x5a);
  std::vector<S> out(size_t(kValueOps) * size_t(n) + kBlock, sentinel);
  HostArray<bool> masks(size_t(kMaskOps) * size_t(n) + kBlock, true);

  auto kernel = compile<int_ops<T>>(cpu());
  kernel(grid(cdiv(n, kBlock)), a.data(), b.data(), s.data(), out.data(), masks.data(), n);

  using U = uint64_t;
  const std::function<S(S, S, S)> refs[kValueOps] = {
      [](S x, S y, S) { return wrap<S>(U(x) + U(y)); },
      [](S x, S y, S) { return wrap<S>(U(x) - U(y)); },
      [](S x, S y, S) { return wrap<S>(U(x) * U(y)); },
      [](S x, S y, S) { return S(x / y); },  // truncates toward zero
      [](S x, S y, S) { return S(x % y); },  // takes the dividend's sign
      [](S x, S y, S) { return S(x & y); },
      [](S x, S y, S) { return S(x | y); },
      [](S x, S y, S) { return S(x ^ y); },
      [](S x, S, S z) { return wrap<S>(U(x) << z); },
      [](S x, S, S z) { return S(x >> z); },  // arithmetic for signed, logical for unsigned
      [](S x, S, S) { return wrap<S>(U(0) - U(x)); },
      [](S x, S, S) { return wrap<S>(~U(x)); },
      [](S x, S y, S) { return std::min(x, y); },
      [](S x, S y, S) { return std::max(x, y); },
      [](S x, S, S) { return negative(x) ? wrap<S>(U(0) - U(x)) : x; },  // unsigned: identity
      [](S x, S, S) { return wrap<S>(U(x) * 3 + 5); },
      [](S x, S, S) { return wrap<S>(U(100) - U(x)); },
      [](S x, S, S) { return wrap<S>(U(S(x / 7)) + U(S(x % 7))); },
      [](S x, S, S) { return S(wrap<S>(U(x) + 6) / 7); },  // (x + 7 - 1) / 7 in the element type
  };
  const char *names[kValueOps] = {"+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "neg", "~", "min", "max", "abs", "x*3+5", "100-x", "x/7+x%7", "cdiv(x, 7)"};
  for (int k = 0; k < kValueOps; ++k) {
    std::vector<S> ref(static_cast<size_t>(n));
    for (size_t i = 0; i < ref.size(); ++i) ref[i] = refs[k](a[i], b[i], s[i]);
    expect_equal(std::string("operator ") + names[k], std::vector<S>(out.begin() + k * n, out.begin() + (k + 1) * n), ref);
  }
  CHECK(std::all_of(out.end() - kBlock, out.end(), [&](S v) { return v == sentinel; }));

  const std::function<bool(S, S)> mask_refs[kMaskOps] = {
      [](S x, S y) { return x < y; },  [](S x, S y) { return x <= y; }, [](S x, S y) { return x > y; },
      [](S x, S y) { return x >= y; }, [](S x, S y) { return x == y; }, [](S x, S y) { return x != y; },
      [](S x, S y) { return x < y && y > 0; }, [](S x, S y) { return x < y || x == 0; }, [](S x, S y) { return !(x < y); },
      [](S x, S y) { return (x < y) != negative(y); }, [](S, S) { return true; },
  };
  for (int k = 0; k < kMaskOps; ++k) {
    std::vector<bool> ref(static_cast<size_t>(n)), got(static_cast<size_t>(n));
    for (size_t i = 0; i < ref.size(); ++i) ref[i] = mask_refs[k](a[i], b[i]), got[i] = masks[size_t(k * n) + i];
    INFO("comparison or logical op #", k);
    expect_equal("mask", got, ref);
  }
  CHECK(std::all_of(masks.data() + kMaskOps * n, masks.data() + kMaskOps * n + kBlock, [](bool v) { return v; }));
}

}  // namespace int_ops_test

TEST_CASE_TEMPLATE("frontend: integer operators match C++ on fixed-width integers", T, i8, u8, i16, i32, i64, u32) {
  KDSL_TEST_RNG(rng);
  for (int n : {int_ops_test::kBlock * 3, int_ops_test::kBlock * 3 + 7}) int_ops_test::check_int_ops<T>(rng, n);
}
