// expect: pow needs floating-point blocks (f32, f16, bf16 or f8e4m3)
// bad_pow_int.cpp - pow of integer blocks must not compile
#include <kdsl/kdsl.h>

using namespace kdsl;

void kernel(Ptr<i32> x) {
  auto a = load(x + arange<16>());
  store(x + arange<16>(), pow(a, 2));
}
