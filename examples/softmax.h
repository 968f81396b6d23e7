// softmax.h - fused row-wise softmax: one program per row, columns past `cols` masked
#pragma once
#include <kdsl/kdsl.h>

namespace examples {
using namespace kdsl;

template <int BLOCK>
void softmax(Ptr<const f32> in, Ptr<f32> out, Scalar<i32> cols, Scalar<i32> stride) {
  auto c = arange<BLOCK>();
  auto mask = c < cols;
  auto row = program_id(0) * stride;
  auto x = load(in + row + c, mask, -inf<f32>());
  auto e = exp(x - max(x));
  store(out + row + c, e / sum(e), mask);
}

}  // namespace examples
