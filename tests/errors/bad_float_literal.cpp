// expect: a floating-point literal cannot combine with an integer block
// bad_float_literal.cpp - an i32 block plus 0.5 must not compile (no silent truncation)
#include <kdsl/kdsl.h>

using namespace kdsl;

void kernel(Ptr<i32> x) {
  auto a = load(x + arange<16>());
  store(x + arange<16>(), a + 0.5);
}
