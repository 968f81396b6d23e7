// expect: exp needs a floating-point block (f32, f16, bf16 or f8e4m3)
// bad_exp_int.cpp - exp of an integer block must not compile
#include <kdsl/kdsl.h>

using namespace kdsl;

void kernel(Ptr<i32> x) {
  auto a = load(x + arange<16>());
  store(x + arange<16>(), exp(a));
}
