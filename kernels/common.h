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

}  // namespace kdsl::kernels
