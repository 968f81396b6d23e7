// expect: argument 1 passes const data to the writable parameter Ptr<f32>: declare the parameter Ptr<const f32> if the kernel only reads it
// bad_const_pointer_argument.cpp - a `const float *` passed to a Ptr<f32> parameter (which the kernel may write) must not compile
#include <kdsl/kdsl.h>

using namespace kdsl;

void scale(Ptr<f32> out, Ptr<f32> x, Scalar<i32> n) {
  auto offs = arange<16>();
  store(out + offs, load(x + offs, offs < n) * 2, offs < n);
}

int main() {
  float out[16] = {};
  const float x[16] = {};
  compile<scale>(Device::cpu())(grid(1), out, x, 16);
}
