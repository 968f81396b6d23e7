// expect: reshape: shape [4, 8] and shape [5, 8] hold different numbers of elements
// bad_reshape.cpp - a reshape must keep the number of elements
#include <kdsl/kdsl.h>

using namespace kdsl;

void kernel(Ptr<f32> x) {
  auto a = load(x + expand_dims<1>(arange<4>()) * 8 + expand_dims<0>(arange<8>()));
  auto b = reshape<5, 8>(a);
  store(x + expand_dims<1>(arange<5>()) * 8 + expand_dims<0>(arange<8>()), b);
}
