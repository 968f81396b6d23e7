// expect: element types f32 and f16 differ
// bad_mixed_dtype.cpp - f32 plus f16 must not compile: the fix is an explicit cast<T>
#include <kdsl/kdsl.h>

using namespace kdsl;

void kernel(Ptr<f32> x, Ptr<f16> y) {
  auto a = load(x + arange<16>());
  auto b = load(y + arange<16>());
  store(x + arange<16>(), a + b);
}
