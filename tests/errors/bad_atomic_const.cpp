// expect: an atomic through a Ptr<const T>: the parameter is read-only
// bad_atomic_const.cpp - atomic_add through a parameter declared Ptr<const i32> must not compile
#include <kdsl/kdsl.h>

using namespace kdsl;

void count(Ptr<const i32> counter) { atomic_add(counter, 1); }

int main() { compile<count>(Device::cpu()); }
