// gpu_tolerance_test.cpp - the GPU tests' comparison (tests/gpu/tolerance.h) on the CPU: last-bit differences of a
// correct kernel pass, a wrong element or a stray NaN fails. Runs in the normal suite: no GPU needed.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <kdsl/kdsl.h>

#include "examples/layer_norm.h"
#include "tests/gpu/tolerance.h"

using namespace kdsl;
using namespace kdsl_test;

namespace gpu_tolerance_test {

const int kRows = 333, kCols = 1000;

// Layer norm as a GPU would compute it: the same formula, sums in another order (sequential
// here, a tree there), and one ulp off in the mean and in rsqrt (rsqrt.approx).
std::vector<float> layer_norm_one_ulp_off(const std::vector<float> &x, const std::vector<float> &w, const std::vector<float> &b) {
  std::vector<float> out(x.size());
  for (int r = 0; r < kRows; ++r) {
    const float *v = &x[size_t(r) * kCols];
    float total = 0;
    for (int c = 0; c < kCols; ++c) total += v[c];
    float mean = std::nextafter(total / kCols, std::numeric_limits<float>::infinity());
    float squares = 0;
    for (int c = 0; c < kCols; ++c) squares += (v[c] - mean) * (v[c] - mean);
    float rstd = std::nextafter(1.0f / std::sqrt(squares / kCols + 1e-5f), 0.0f);
    for (int c = 0; c < kCols; ++c) out[size_t(r) * kCols + c] = (v[c] - mean) * rstd * w[c] + b[c];
  }
  return out;
}

// The old per-element measure, |g - c| / (1e-6 + |c|): what the GPU tests used before.
double worst_element_relative(const std::vector<float> &got, const std::vector<float> &want) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, double(std::fabs(got[i] - want[i]) / (1e-6 + std::fabs(want[i]))));
  return worst;
}

}  // namespace gpu_tolerance_test

using namespace gpu_tolerance_test;

TEST_CASE("gpu tolerance: layer norm one ulp off in mean and rsqrt passes; a wrong element, a NaN or a short array fails") {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0, 3);
  std::vector<float> x(size_t(kRows) * kCols), w(kCols), b(kCols), cpu(x.size());
  for (float &v : x) v = normal(rng);
  for (float &v : w) v = normal(rng);
  for (float &v : b) v = normal(rng) * 0.01f;  // small bias: many outputs near zero
  compile<examples::layer_norm<1024>>(Device::cpu(2))(grid(kRows), x.data(), w.data(), b.data(), cpu.data(), kCols, 1e-5f);

  std::vector<float> gpu = layer_norm_one_ulp_off(x, w, b);
  ArrayDifference d = compare_arrays<float>(gpu, cpu);
  INFO(d.text(kReduction));
  CHECK(d.ratio > 0);  // the injected difference is there
  CHECK(d.within(kReduction));
  // Why the per-array measure: the same correct output fails the old per-element one, at an
  // element near zero.
  CHECK(worst_element_relative(gpu, cpu) > 1e-4);

  // One element off by 0.1% of the array's scale: a lost or misplaced write looks like this or worse.
  std::vector<float> wrong = gpu;
  size_t at = wrong.size() / 2 + 17;
  wrong[at] = cpu[at] + float(1e-3 * d.max_reference);
  ArrayDifference bad = compare_arrays<float>(wrong, cpu);
  CHECK(!bad.within(kReduction));
  CHECK(bad.worst == at);
  CHECK(bad.text(kReduction).find("worst at [" + std::to_string(at) + "]") != std::string::npos);

  // A NaN where the CPU has a number fails at any bound; NaN against NaN does not.
  std::vector<float> nan = gpu;
  nan[5] = std::numeric_limits<float>::quiet_NaN();
  CHECK(!compare_arrays<float>(nan, cpu).within(kTensorCoreDot));
  std::vector<float> both = cpu;
  both[5] = std::numeric_limits<float>::quiet_NaN();
  CHECK(compare_arrays<float>(nan, both).special_mismatches == 0);
  CHECK(!compare_arrays<float>(std::vector<float>(gpu.begin(), gpu.end() - 1), cpu).within(kTensorCoreDot));

  // Exact families allow nothing.
  CHECK(compare_arrays<float>(cpu, cpu).within(kExact));
  CHECK(!compare_arrays<float>(gpu, cpu).within(kExact));
}
