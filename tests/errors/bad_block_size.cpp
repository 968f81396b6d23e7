// expect: block shape [2048, 1024] holds 2097152 elements, more than the limit of 2^20 (1048576)
// bad_block_size.cpp - a block of 2^21 elements must not compile (its stack array would overflow a thread's stack)
#include <kdsl/kdsl.h>

using namespace kdsl;

void too_big(Ptr<f32> out) { store(out + expand_dims<1>(arange<2048>()) * 1024 + expand_dims<0>(arange<1024>()), 0.0f); }

int main() { compile<too_big>(Device::cpu()); }
