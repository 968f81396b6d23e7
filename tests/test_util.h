// test_util.h - shared helpers for kernel tests: seeded random inputs, dtype rounding, tolerance checks
#pragma once
#include <doctest/doctest.h>
#include <kdsl/kdsl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace kdsl_test {

// The CPU device every kernel test runs on (two workers, so programs really run in parallel).
inline const kdsl::Device &cpu() {
  static const kdsl::Device device = kdsl::Device::cpu(2);
  return device;
}

// A fresh seed per test case; KDSL_TEST_SEED=<n> replays one.
inline uint32_t fresh_seed() {
  if (const char *s = std::getenv("KDSL_TEST_SEED")) return uint32_t(std::strtoul(s, nullptr, 10));
  return std::random_device{}();
}

// Declares `rng`, seeded afresh, with the seed in every failure message of the enclosing scope.
#define KDSL_TEST_RNG(rng)                                      \
  const uint32_t rng##_seed = ::kdsl_test::fresh_seed();        \
  INFO("rerun with KDSL_TEST_SEED=", rng##_seed);               \
  std::mt19937 rng(rng##_seed)

template <class T>
using storage_t = typename T::storage;

// The value of any host storage element, as a double.
template <class S>
double as_double(S v) {
  if constexpr (std::is_same_v<S, kdsl::half> || std::is_same_v<S, kdsl::bfloat16> || std::is_same_v<S, kdsl::float8_e4m3>) return double(float(v));
  else return double(v);
}

// Rounds a value to dtype T's storage the way kdsl's casts are specified (round to nearest even).
template <class T>
storage_t<T> to_storage(double v) {
  using S = storage_t<T>;
  if constexpr (std::is_same_v<S, kdsl::half> || std::is_same_v<S, kdsl::bfloat16> || std::is_same_v<S, kdsl::float8_e4m3>) return S(float(v));
  else return S(v);
}
template <class T>
double round_as(double v) {
  return as_double(to_storage<T>(v));
}

// One unit in the last place at 1.0 for a float dtype.
template <class T>
constexpr double epsilon() {
  if constexpr (std::is_same_v<T, kdsl::f16>) return 0x1p-10;
  else if constexpr (std::is_same_v<T, kdsl::bf16>) return 0x1p-7;
  else if constexpr (std::is_same_v<T, kdsl::f8e4m3>) return 0x1p-3;
  else return 0x1p-23;
}

// A host array with contiguous storage for every element type (std::vector<bool> has none).
template <class S>
class HostArray {
 public:
  HostArray() = default;
  explicit HostArray(size_t n, S fill = S()) : data_(new S[n]), size_(n) { std::fill_n(data_.get(), n, fill); }
  S *data() const { return data_.get(); }
  size_t size() const { return size_; }
  S &operator[](size_t i) const { return data_[i]; }
  S *begin() const { return data_.get(); }
  S *end() const { return data_.get() + size_; }

 private:
  std::unique_ptr<S[]> data_;
  size_t size_ = 0;
};

// Uniform values of element type T in [lo, hi], already representable in T.
template <class T>
HostArray<storage_t<T>> random_values(std::mt19937 &rng, size_t n, double lo, double hi) {
  HostArray<storage_t<T>> out(n);
  if constexpr (kdsl::is_float(T::dtype)) {
    std::uniform_real_distribution<double> dist(lo, hi);
    for (auto &v : out) v = to_storage<T>(dist(rng));
  } else {
    std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
    for (auto &v : out) v = storage_t<T>(dist(rng));
  }
  return out;
}

// Every value of an integer type's range (or of a float type's [-range, range]).
template <class T>
HostArray<storage_t<T>> random_full_range(std::mt19937 &rng, size_t n) {
  using S = storage_t<T>;
  if constexpr (std::is_same_v<S, bool>) {
    return random_values<T>(rng, n, 0, 1);
  } else if constexpr (std::is_integral_v<S>) {
    HostArray<S> out(n);
    for (auto &v : out) v = S((uint64_t(rng()) << 32) | rng());  // modular: every bit pattern
    return out;
  } else {
    return random_values<T>(rng, n, -1000, 1000);
  }
}

// Compares got[i] with ref[i] for every i where checked(i): equal (both NaN counts as equal),
// or within rtol * max(|ref|, floor). Reports the count and the first few mismatches.
struct Comparison {
  std::string what;
  double rtol = 0;
  double floor = 0;  // scale below which the tolerance stops shrinking (absolute tolerance rtol * floor)
};

inline bool close_enough(double got, double ref, double rtol, double floor) {
  if (std::isnan(got) || std::isnan(ref)) return std::isnan(got) && std::isnan(ref);
  if (got == ref) return true;
  if (std::isinf(got) || std::isinf(ref)) return false;
  return std::fabs(got - ref) <= rtol * std::max(std::fabs(ref), floor);
}

// As above, with a per-element scale: |got - ref| <= rtol * max(|ref|, scale(i)). A sum's
// scale is the sum of its terms' magnitudes, which bounds its rounding error.
template <class Got, class Ref, class Checked, class Scale>
void expect_close_scaled(const std::string &what, double rtol, size_t n, Got got, Ref ref, Checked checked, Scale scale) {
  size_t bad = 0, checked_count = 0;
  std::ostringstream first;
  first.precision(10);
  for (size_t i = 0; i < n; ++i) {
    if (!checked(i)) continue;
    ++checked_count;
    double g = got(i), r = ref(i);
    if (close_enough(g, r, rtol, scale(i))) continue;
    if (bad++ < 4) first << "\n  [" << i << "] got " << g << ", expected " << r;
  }
  INFO(what, ": ", bad, " of ", checked_count, " elements differ (rtol ", rtol, ")", first.str());
  CHECK(bad == 0);
}

template <class Got, class Ref, class Checked>
void expect_close(const Comparison &c, size_t n, Got got, Ref ref, Checked checked) {
  expect_close_scaled(c.what, c.rtol, n, got, ref, checked, [&](size_t) { return c.floor; });
}

template <class Got, class Ref>
void expect_close(const Comparison &c, size_t n, Got got, Ref ref) {
  expect_close(c, n, got, ref, [](size_t) { return true; });
}

// Exact comparison of two host arrays, element by element.
// Exact comparison of two host arrays, element by element (integers exactly, floats by value
// with NaN equal to NaN).
template <class A, class B>
void expect_equal(const std::string &what, const std::vector<A> &got, const std::vector<B> &ref) {
  REQUIRE(got.size() == ref.size());
  if constexpr (std::is_integral_v<A> && std::is_integral_v<B>) {
    size_t bad = 0;
    std::ostringstream first;
    auto text = [](auto v) { return std::is_signed_v<decltype(v)> ? std::to_string(int64_t(v)) : std::to_string(uint64_t(v)); };
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] == ref[i]) continue;
      if (bad++ < 4) first << "\n  [" << i << "] got " << text(got[i]) << ", expected " << text(ref[i]);
    }
    INFO(what, ": ", bad, " of ", got.size(), " elements differ", first.str());
    CHECK(bad == 0);
  } else {
    expect_close({what, 0, 0}, got.size(), [&](size_t i) { return as_double(got[i]); }, [&](size_t i) { return as_double(ref[i]); });
  }
}

// The exception text of `f`, or "" when it throws nothing.
// Sets an environment variable for the life of the object, then restores the old value (or
// unsets it): KDSL_AUTOTUNE, KDSL_CACHE_DIR, a fake library's path, for one test case.
class ScopedEnv {
 public:
  ScopedEnv(const char *name, const std::string &value) : name_(name) {
    if (const char *old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_.c_str(), old_->c_str(), 1);
    else ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

template <class F>
std::string error_text(F &&f) {
  try {
    f();
  } catch (const kdsl::Error &e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

}  // namespace kdsl_test
