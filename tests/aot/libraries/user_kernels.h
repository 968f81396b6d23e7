// user_kernels.h - two kernels as a user's library writes them: one templated on its block size, one not
#pragma once
#include <kdsl/kdsl.h>

namespace user_kernels {
using namespace kdsl;

// out = a * x + y, one program per BLOCK elements.
template <int BLOCK>
void scale_add(Ptr<f32> x, Ptr<f32> y, Ptr<f32> out, Scalar<f32> a, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  auto mask = offs < n;
  store(out + offs, a * load(x + offs, mask) + load(y + offs, mask), mask);
}

// out[row] = the sum of row `row` of x (cols <= 512 columns, rows `cols` apart).
inline void row_sums(Ptr<f32> x, Ptr<f32> out, Scalar<i32> cols) {
  auto c = arange<512>();
  auto v = load(x + program_id(0) * cols + c, c < cols, 0.0f);
  store(out + program_id(0), sum(v));
}

}  // namespace user_kernels
