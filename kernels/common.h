// common.h - small helpers the kernel headers share: 64-bit offsets and 2-D index views
#pragma once
#include <kdsl/kdsl.h>

namespace kdsl::kernels {

// Widens an index (block or scalar) to i64, for offsets into arrays that may pass 2^31 elements.
template <class E, int... D>
Block<i64, D...> wide(const Block<E, D...> &x) {
  return cast<i64>(x);
}

// x as a column [N, 1] or a row [1, N] of a 2-D block.
template <class E, int N>
Block<E, N, 1> col(const Block<E, N> &x) {
  return expand_dims<1>(x);
}
template <class E, int N>
Block<E, 1, N> row(const Block<E, N> &x) {
  return expand_dims<0>(x);
}

// A position that changes every decoding step travels as an f32 (exact below 2^24): integer
// arguments are specialized by class (equal to 1, divisible by 16, other), so an i32 position
// would recompile the kernel as it crosses those classes; floats are not specialized.
inline Scalar<i32> position(const Scalar<f32> &p) { return cast<i32>(p); }

}  // namespace kdsl::kernels
