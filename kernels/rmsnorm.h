// rmsnorm.h - RMSNorm of each row, optionally fused with the residual add before it
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// One program per row of `dim` (<= BLOCK) values:
//   ADD_RESIDUAL: x[r,:] += residual[r,:] (written back), then
//   y[r,:] = x[r,:] * rsqrt(mean(x[r,:]^2) + eps) * w[:], rounded to Y (f32, or the f16 / bf16
//   a GPU's next product reads: Library::product_input_type).
// The row is loaded once into a block, so an f32 y may alias x. Without ADD_RESIDUAL x is only read.
template <int BLOCK, bool ADD_RESIDUAL, class Y = f32>
void rmsnorm(std::conditional_t<ADD_RESIDUAL, Ptr<f32>, Ptr<const f32>> x, Ptr<const f32> residual, Ptr<const f32> w, Ptr<Y> y, Scalar<i32> dim, Scalar<f32> eps) {
  auto c = arange<BLOCK>();
  auto mask = c < dim;
  auto offs = program_id(0) * dim + c;
  auto v = load(x + offs, mask, 0);
  if constexpr (ADD_RESIDUAL) {
    v = v + load(residual + offs, mask, 0);
    store(x + offs, v, mask);
  }
  auto inv_rms = rsqrt(sum(v * v) / cast<f32>(dim) + eps);
  store(y + offs, cast<Y>(v * inv_rms * load(w + c, mask, 0)), mask);
}

}  // namespace kdsl::kernels
