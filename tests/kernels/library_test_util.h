// library_test_util.h - shared pieces of the kernel library tests: one Library, random data, scaled comparisons
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/library.h"
#include "tests/test_util.h"

namespace kernels_test {

// One library for every kernel test, so each specialization compiles once per run.
inline kdsl::kernels::Library &library() {
  static kdsl::kernels::Library lib(kdsl_test::cpu());
  return lib;
}

inline std::vector<float> random_floats(std::mt19937 &rng, size_t n, double lo = -1, double hi = 1) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<float> out(n);
  for (float &v : out) v = float(dist(rng));
  return out;
}

// Checks |got[i] - ref[i]| <= rtol * scale[i] for every i, where scale[i] is the size of the
// terms that made ref[i] (for a sum, the sum of their magnitudes), so cancellation cannot
// make an f32 result look wrong.
inline void expect_close_scaled(const std::string &what, const std::vector<float> &got, const std::vector<double> &ref,
                                const std::vector<double> &scale, double rtol) {
  REQUIRE(got.size() == ref.size());
  REQUIRE(scale.size() == ref.size());
  size_t bad = 0;
  std::ostringstream first;
  first.precision(9);
  for (size_t i = 0; i < got.size(); ++i) {
    double err = std::fabs(double(got[i]) - ref[i]);
    if (err <= rtol * scale[i] && !std::isnan(got[i])) continue;
    if (bad++ < 4) first << "\n  [" << i << "] got " << got[i] << ", expected " << ref[i] << " (scale " << scale[i] << ")";
  }
  INFO(what, ": ", bad, " of ", got.size(), " elements differ (rtol ", rtol, " of the terms' magnitude)", first.str());
  CHECK(bad == 0);
}

// out[r,n] = sum_k w[n,k] * x[r,k] (+ bias[n] when bias is not null) in float64, with each
// element's scale for expect_close_scaled: the sum of its terms' magnitudes. x is rows x K,
// w is N x K, both as the kernel sees them (rounded to the weight type already).
struct ReferenceProduct {
  std::vector<double> values, scale;
};
inline ReferenceProduct reference_matmul(const std::vector<float> &x, const std::vector<float> &w, const float *bias, int rows, int N, int K) {
  ReferenceProduct ref{std::vector<double>(size_t(rows) * size_t(N)), std::vector<double>(size_t(rows) * size_t(N))};
  for (int r = 0; r < rows; ++r)
    for (int n = 0; n < N; ++n) {
      double s = bias ? bias[n] : 0, m = bias ? std::fabs(bias[n]) : 0;
      for (int k = 0; k < K; ++k) {
        double p = double(w[size_t(n) * size_t(K) + size_t(k)]) * x[size_t(r) * size_t(K) + size_t(k)];
        s += p;
        m += std::fabs(p);
      }
      ref.values[size_t(r) * size_t(N) + size_t(n)] = s;
      ref.scale[size_t(r) * size_t(N) + size_t(n)] = m;
    }
  return ref;
}

// A kernel's f32 output of n elements followed by a guard of kGuard more holding a sentinel
// value: a store past the n (which, into a plain vector, would corrupt the heap for a later
// test to crash on) shows as a guard that is no longer intact.
class GuardedOutput {
 public:
  static constexpr size_t kGuard = 1024;
  explicit GuardedOutput(size_t n, float fill) : n_(n), data_(n + kGuard, fill) {
    std::fill(data_.begin() + long(n), data_.end(), kSentinel);
  }
  float *data() { return data_.data(); }
  std::vector<float> values() const { return {data_.begin(), data_.begin() + long(n_)}; }
  bool intact() const {
    return std::all_of(data_.begin() + long(n_), data_.end(), [](float v) { return std::memcmp(&v, &kSentinel, sizeof v) == 0; });
  }

 private:
  static constexpr float kSentinel = -12345.5f;
  size_t n_;
  std::vector<float> data_;
};

// The same with one scale for every element.
inline void expect_close_scaled(const std::string &what, const std::vector<float> &got, const std::vector<double> &ref, double scale,
                                double rtol) {
  expect_close_scaled(what, got, ref, std::vector<double>(ref.size(), scale), rtol);
}

}  // namespace kernels_test
