// expect: wrong number of kernel arguments
// bad_argument_count.cpp - launching a kernel of three parameters with two arguments must not compile
#include <kdsl/kdsl.h>

using namespace kdsl;

void scale(Ptr<f32> x, Ptr<f32> out, Scalar<f32> factor) { store(out + arange<16>(), load(x + arange<16>()) * factor); }

void launch(float *x, float *out) {
  auto k = compile<scale>(Device::cpu());
  k(grid(1), x, out);
}
