// expect: reinterpret<U> needs a block of pointers (Ptr<T>): to reinterpret values' bits use bitcast<U>
// bad_reinterpret_value.cpp - reinterpret of a block of values (not pointers) must not compile
#include <kdsl/kdsl.h>

using namespace kdsl;

void kernel(Ptr<f32> x) {
  auto v = load(x + arange<16>());
  store(reinterpret<f32>(x) + arange<16>(), load(reinterpret<f32>(v)));
}
