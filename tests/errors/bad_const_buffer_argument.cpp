// expect: argument 0 passes const data to the writable parameter Ptr<f32>: declare the parameter Ptr<const f32> if the kernel only reads it
// bad_const_buffer_argument.cpp - a const Buffer<float> passed as the output of a kernel must not compile
#include <kdsl/kdsl.h>

using namespace kdsl;

void fill(Ptr<f32> out) { store(out + arange<16>(), 1.0f); }

void run(const Buffer<float> &result) { compile<fill>(Device::cpu())(grid(1), result); }

int main() { run(Buffer<float>(16)); }
