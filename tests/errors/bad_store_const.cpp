// expect: store through a Ptr<const T>: the parameter is read-only
// bad_store_const.cpp - a kernel storing through a parameter declared Ptr<const f32> must not compile
#include <kdsl/kdsl.h>

using namespace kdsl;

void overwrite(Ptr<const f32> x, Scalar<i32> n) {
  auto offs = arange<16>();
  store(x + offs, full<f32, 16>(0), offs < n);
}

int main() { compile<overwrite>(Device::cpu()); }
