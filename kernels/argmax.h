// argmax.h - the first index of the maximum of a vector, for greedy sampling
#pragma once
#include <limits>

#include "kernels/common.h"

namespace kdsl::kernels {

// A single program walks x BLOCK values at a time, keeping per lane the best value and the
// first index where it was seen (strictly greater replaces, so earlier indices win ties);
// the lanes then agree on the maximum and take the smallest index holding it.
template <int BLOCK>
void argmax(Ptr<const f32> x, Ptr<i32> out, Scalar<i32> n) {
  auto lane = arange<BLOCK>();
  auto [best, index] = for_range(0, n, BLOCK, full<f32, BLOCK>(-inf<f32>()), zeros<i32, BLOCK>(), [&](auto k, auto best, auto index) {
    auto offs = k + lane;
    auto v = load(x + offs, offs < n, -inf<f32>());
    auto better = v > best;
    return std::tuple(where(better, v, best), where(better, offs, index));
  });
  auto top = max(best);
  store(out, min(where(best == top, index, std::numeric_limits<int32_t>::max())));
}

}  // namespace kdsl::kernels
