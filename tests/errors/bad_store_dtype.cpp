// expect: element types f32 and f16 differ
// bad_store_dtype.cpp - storing an f16 block through a Ptr<f32> must not compile
#include <kdsl/kdsl.h>

using namespace kdsl;

void kernel(Ptr<f32> out, Ptr<f16> in) { store(out + arange<16>(), load(in + arange<16>())); }
