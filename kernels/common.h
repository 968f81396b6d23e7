// common.h - small helpers the kernel headers share: 64-bit offsets, 2-D index views, decode row spreading
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

// The BN weight rows a decode program reads: row program_id(0) of each of BN equal runs of the
// N rows, so cdiv(N, BN) programs cover them all (rows past N are the caller's to clamp and
// mask). The host backend runs each thread over a contiguous range of programs, so a thread
// reads BN sequential streams far apart rather than one block of BN neighbouring rows: more
// DRAM pages and hardware-prefetch streams are busy at once. On the 2-core development VM
// (Sapphire Rapids), with the prefetch of matvec.h, kdsl-bench-engine's single f16 decode
// products went from 17-20 to 25-28 GB/s, f32 from 21-23 to 26-28 and Q8_0 from 9-12 to
// 16-23. A GPU sees the same coalesced rows, only in another order.
// AXIS is the grid axis that numbers the runs' rows (1 where axis 0 numbers rows of x, so that
// the programs one thread runs in a row share their weight rows).
template <int BN, int AXIS = 0>
Block<i32, BN> spread_rows(const Scalar<i32> &N) {
  return program_id(AXIS) + arange<BN>() * ((N + (BN - 1)) / BN);
}

// Stores a product's outputs y ([BR, BN]: rows r of x by weight rows rn), plus bias[rn] where
// HAS_BIAS, at out[r][rn], masked to r < rows and rn < N: the decode and few-row kernels clamp
// those rows for loading and leave them out here.
template <bool HAS_BIAS, int BR, int BN>
void store_product(const Ptr<f32> &out, const Ptr<const f32> &bias, Block<f32, BR, BN> y, const Block<i32, BR> &r, const Block<i32, BN> &rn,
                   const Scalar<i32> &rows, const Scalar<i32> &N) {
  if constexpr (HAS_BIAS) y = y + row(load(bias + minimum(rn, N - 1)));
  store(out + col(wide(r) * wide(N)) + row(rn), y, col(r < rows) && row(rn < N));
}

}  // namespace kdsl::kernels
