// swiglu.h - the SwiGLU gate: out = silu(gate) * up, elementwise
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// silu(gate) * up, as every SwiGLU in the library computes it.
template <class G, class U>
auto silu_times(const G &gate, const U &up) {
  return gate * sigmoid(gate) * up;
}

// One program per BLOCK elements, out rounded to O (f32, or the f16 / bf16 a GPU's down product
// reads); an f32 out may alias gate (or up): both inputs are read first.
template <int BLOCK, class O = f32>
void swiglu(Ptr<const f32> gate, Ptr<const f32> up, Ptr<O> out, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  auto mask = offs < n;
  auto g = load(gate + offs, mask, 0);
  auto u = load(up + offs, mask, 0);
  store(out + offs, cast<O>(silu_times(g, u)), mask);
}

}  // namespace kdsl::kernels
