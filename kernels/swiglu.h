// swiglu.h - the SwiGLU gate: out = silu(gate) * up, elementwise
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// silu(gate) * up, as every SwiGLU in the library computes it.
template <class G, class U>
auto silu_times(const G &gate, const U &up) {
  return gate * sigmoid(gate) * up;
}

// One program per BLOCK elements; out may alias gate (or up): both inputs are read first.
template <int BLOCK>
void swiglu(Ptr<const f32> gate, Ptr<const f32> up, Ptr<f32> out, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  auto mask = offs < n;
  auto g = load(gate + offs, mask, 0);
  auto u = load(up + offs, mask, 0);
  store(out + offs, silu_times(g, u), mask);
}

}  // namespace kdsl::kernels
