// expect: a block has no single truth value while the kernel is traced
// bad_if_on_block.cpp - a C++ `if` on a traced condition must not compile, and must say what to write instead
#include <kdsl/kdsl.h>

using namespace kdsl;

void kernel(Ptr<f32> x, Scalar<i32> n) {
  if (program_id(0) < n) store(x + arange<16>(), 1.0f);
}
