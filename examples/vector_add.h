// vector_add.h - the first kdsl kernel: out = x + y, one program per BLOCK elements
#pragma once
#include <kdsl/kdsl.h>

namespace examples {
using namespace kdsl;

template <int BLOCK>
void add(Ptr<const f32> x, Ptr<const f32> y, Ptr<f32> out, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  auto mask = offs < n;
  store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);
}

}  // namespace examples
