// expect: dot: inner dimensions differ: a is [16, 32] and b is [16, 16]
// bad_dot_inner.cpp - dot of [16, 32] and [16, 16] must not compile
#include <kdsl/kdsl.h>

using namespace kdsl;

void kernel(Ptr<f32> x, Ptr<f32> out) {
  auto a = load(x + expand_dims<1>(arange<16>()) * 32 + expand_dims<0>(arange<32>()));
  auto b = load(x + expand_dims<1>(arange<16>()) * 16 + expand_dims<0>(arange<16>()));
  store(out + expand_dims<1>(arange<16>()) * 16 + expand_dims<0>(arange<16>()), dot(a, b));
}
