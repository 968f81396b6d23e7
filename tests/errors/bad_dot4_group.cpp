// expect: dot4: the last extent of [8, 30] is not a multiple of 4
// bad_dot4_group.cpp - dot4 of [8, 30] bytes must not compile: its groups of 4 do not divide the last axis
#include <kdsl/kdsl.h>

using namespace kdsl;

void kernel(Ptr<i8> x, Ptr<i32> out) {
  auto a = load(x + expand_dims<1>(arange<8>()) * 30 + expand_dims<0>(arange<30>()));
  auto s = dot4(a, a);
  store(out + expand_dims<1>(arange<8>()) * 7 + expand_dims<0>(arange<7>()), s);
}
