// tolerance.h - how a GPU kernel's output is compared with the CPU backend's: per array, the
// largest absolute difference over the largest |reference|, against a bound per op family.
//
// Why per array and not per element: a correct GPU kernel differs from the CPU in the last bits
// (rsqrt.approx and ex2.approx against the CPU's math, tensor-core and warp-shuffle summation
// orders), and an element near zero (layer norm's x - mean, a dot of cancelling terms) turns
// that into a large relative error of that element alone. Measured against the array's scale,
// the same difference is tiny, while a wrong element (a bad index, a missed mask, a lost
// write) is off by a sizeable fraction of the scale and fails.
//
// family          bound on max|gpu - cpu| / max|cpu|   why
// Exact           0                                    one IEEE rounding per element on both (add, copy, argmax, integer results)
// ApproxMath      2^-17 (7.6e-6)                       ex2.approx / rsqrt.approx / div.approx are within 2 ulp; exp(x) as ex2(x*log2 e)
//                                                      scales the argument's rounding by |x| (up to ~20 here), so ~64 ulp of the scale
// Reduction       2^-15 (3.1e-5)                       f32 sums of up to a few thousand terms in another order (CPU vector lanes
//                                                      against warp shuffles), then ApproxMath (softmax, layer norm, RMSNorm)
// TensorCoreDot   2^-11 (4.9e-4)                       f16/bf16 products summed in f32 over K up to ~1000 by the tensor cores, in
//                                                      their order and alignment (Hopper's accumulation is not round-to-nearest per add)
// Attention16      2^-8 (3.9e-3)                      flash attention in f16: P rounded to f16 between the two dots on both sides,
//                                                      so a score differing in its last bits moves some of P by 2^-11, and the f16
//                                                      output rounds again; a few such steps of the scale (a wrong mask: ~0.1)
// NaN must meet NaN and an infinity the same infinity; a mismatch fails whatever the bound.
#pragma once
#include <cmath>
#include <cstddef>
#include <sstream>
#include <span>
#include <string>

namespace kdsl_test {

struct Tolerance {
  const char *family;
  double bound;  // on max|got - want| / max|want|
};

inline constexpr Tolerance kExact{"exact", 0};
inline constexpr Tolerance kApproxMath{"approximate math", 0x1p-17};
inline constexpr Tolerance kReduction{"reduction", 0x1p-15};
inline constexpr Tolerance kTensorCoreDot{"tensor-core dot", 0x1p-11};
inline constexpr Tolerance kAttention16{"16-bit attention", 0x1p-8};

// One output array's difference, with the worst element to say where.
struct ArrayDifference {
  double ratio = 0;           // max|got - want| / max|want| (max|got - want| when want is all zeros)
  double max_reference = 0;   // max|want|
  size_t worst = 0;           // index of the largest difference
  double got = 0, want = 0;   // at `worst`
  size_t special_mismatches = 0;  // NaN or infinity on one side only (or infinities of opposite sign)
  size_t first_special = 0;
  size_t size = 0;

  bool within(const Tolerance &t) const { return special_mismatches == 0 && ratio <= t.bound; }
  std::string text(const Tolerance &t) const {
    std::ostringstream s;
    s.precision(9);
    s << "max|gpu - cpu| / max|cpu| = " << ratio << " (bound " << t.bound << ", " << t.family << "), max|cpu| = " << max_reference
      << ", worst at [" << worst << "] of " << size << ": gpu " << got << ", cpu " << want;
    if (special_mismatches) s << "; " << special_mismatches << " NaN/infinity mismatches, first at [" << first_special << "]";
    return s.str();
  }
};

template <class T>
ArrayDifference compare_arrays(std::span<const T> got, std::span<const T> want) {
  ArrayDifference d;
  d.size = want.size();
  double max_diff = 0;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    double g = double(got[i]), w = double(want[i]);
    bool special = !std::isfinite(g) || !std::isfinite(w);
    if (special) {
      bool same = (std::isnan(g) && std::isnan(w)) || g == w;
      if (!same && d.special_mismatches++ == 0) d.first_special = i;
      continue;
    }
    d.max_reference = std::max(d.max_reference, std::fabs(w));
    if (double diff = std::fabs(g - w); diff > max_diff || (i == 0 && diff == 0)) {
      max_diff = diff;
      d.worst = i, d.got = g, d.want = w;
    }
  }
  if (got.size() != want.size() && d.special_mismatches++ == 0) d.first_special = std::min(got.size(), want.size());
  d.ratio = d.max_reference > 0 ? max_diff / d.max_reference : max_diff;
  return d;
}

}  // namespace kdsl_test
