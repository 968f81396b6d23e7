// layer_norm.h - layer normalization of each row with weight and bias, in one pass over a block
#pragma once
#include <kdsl/kdsl.h>

namespace examples {
using namespace kdsl;

template <int BLOCK>
void layer_norm(Ptr<const f32> x, Ptr<const f32> weight, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> cols, Scalar<f32> eps) {
  auto c = arange<BLOCK>();
  auto mask = c < cols;
  auto row = program_id(0) * cols;
  auto v = load(x + row + c, mask);
  auto n = cast<f32>(cols);
  auto mean = sum(v) / n;
  auto centered = where(mask, v - mean, 0.0f);
  auto rstd = rsqrt(sum(centered * centered) / n + eps);
  auto y = centered * rstd * load(weight + c, mask) + load(bias + c, mask);
  store(out + row + c, y, mask);
}

}  // namespace examples
