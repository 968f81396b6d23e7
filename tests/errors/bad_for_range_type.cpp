// expect: for_range: the body must return a block of the same type (element and shape) as the carried value
// bad_for_range_type.cpp - a loop body returning [32] for a carried [16] must not compile
#include <kdsl/kdsl.h>

using namespace kdsl;

void kernel(Ptr<f32> x, Scalar<i32> n) {
  auto acc = for_range(0, n, 16, zeros<f32, 16>(), [&](auto k, auto acc) { return load(x + k + arange<32>()); });
  store(x + arange<16>(), acc);
}
