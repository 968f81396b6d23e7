// softmax.h - row-wise softmax in place: one block per row, or a two-pass online form for long rows
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// One program per row of `cols` <= BLOCK values.
template <int BLOCK>
void softmax(Ptr<f32> x, Scalar<i32> cols) {
  auto c = arange<BLOCK>();
  auto mask = c < cols;
  auto p = x + wide(program_id(0)) * wide(cols) + c;
  auto v = load(p, mask, -inf<f32>());
  auto e = exp(v - max(v));
  store(p, e / sum(e), mask);
}

// One program per row of any length, BLOCK columns at a time: a first pass keeps a running
// maximum and a running sum of exponentials per lane (rescaled when the maximum grows), a
// second pass writes exp(x - max) / sum.
template <int BLOCK>
void softmax_online(Ptr<f32> x, Scalar<i32> cols) {
  constexpr double lowest = -3.0e38;  // finite: lanes that never see a column stay harmless
  auto c = arange<BLOCK>();
  auto p = x + wide(program_id(0)) * wide(cols);
  auto [m, l] = for_range(0, cols, BLOCK, full<f32, BLOCK>(lowest), zeros<f32, BLOCK>(), [&](auto k, auto m, auto l) {
    auto mask = k + c < cols;
    auto v = load(p + k + c, mask, lowest);
    auto m_new = maximum(m, v);
    auto l_new = l * exp(m - m_new) + where(mask, exp(v - m_new), 0.0f);
    return std::tuple(m_new, l_new);
  });
  auto total_max = max(m);
  auto inv_total = 1.0f / sum(l * exp(m - total_max));
  for_range(0, cols, BLOCK, [&](auto k) {
    auto mask = k + c < cols;
    auto v = load(p + k + c, mask, 0);
    store(p + k + c, exp(v - total_max) * inv_total, mask);
  });
}

}  // namespace kdsl::kernels
