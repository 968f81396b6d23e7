// expect: shapes [4, 8] and [8, 4] do not broadcast
// bad_broadcast_2d.cpp - a [4, 8] block times an [8, 4] block must not compile
#include <kdsl/kdsl.h>

using namespace kdsl;

void kernel(Ptr<f32> x) {
  auto a = load(x + expand_dims<1>(arange<4>()) * 8 + expand_dims<0>(arange<8>()));
  auto b = load(x + expand_dims<1>(arange<8>()) * 4 + expand_dims<0>(arange<4>()));
  store(x + expand_dims<1>(arange<4>()) * 8 + expand_dims<0>(arange<8>()), a * b);
}
