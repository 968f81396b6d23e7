// expect: if_: both branches must return the same block types
// bad_if_branches.cpp - if_ branches returning f32 and i32 blocks must not compile
#include <kdsl/kdsl.h>

using namespace kdsl;

void kernel(Ptr<f32> x, Scalar<i32> n) {
  auto v = if_(n > 0, [&] { return load(x + arange<16>()); }, [&] { return arange<16>(); });
  store(x + arange<16>(), v);
}
