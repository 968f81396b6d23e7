// expect: shapes [16] and [32] do not broadcast
// bad_broadcast.cpp - adding blocks of 16 and 32 elements must not compile
#include <kdsl/kdsl.h>

using namespace kdsl;

void kernel(Ptr<f32> x) {
  auto a = load(x + arange<16>());
  auto b = load(x + arange<32>());
  store(x + arange<16>(), a + b);
}
