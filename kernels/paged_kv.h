// paged_kv.h - addressing a paged KV cache from kernels: where each position's row of a kv head lives
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// Element offsets [BT, D] of kv head `kv_head`'s key (or value) vectors for the BT positions
// start .. start + BT - 1 of a cache of pages [num_pages][page_size][n_kv_heads][head_dim],
// through the sequence's block table. Positions from `end` on (and, unless FULL_D says
// head_dim == D, columns from head_dim on) are clamped to the last valid ones, so every offset
// is readable: the loads need no mask, their address math stays unconditional (hoisted out of
// the inner loop, and with FULL_D affine, so rows load as vectors), and callers mask the
// scores of positions >= end and ignore columns >= head_dim (whose query entries are zero).
// TILE_IN_PAGE: start is a multiple of BT and page_size of BT, so the tile lies in one page
// and the table is read once; otherwise once per position.
template <int BT, int D, bool TILE_IN_PAGE, bool FULL_D>
Block<i64, BT, D> paged_offsets(const Ptr<const i32> &block_table, const Scalar<i32> &start, const Scalar<i32> &end, const Scalar<i32> &page_size,
                                const Scalar<i32> &n_kv_heads, const Scalar<i32> &head_dim, const Scalar<i32> &kv_head) {
  auto pos = minimum(start + arange<BT>(), end - 1);
  Block<i64, BT> token = [&] {
    if constexpr (TILE_IN_PAGE) {
      auto page = load(block_table + start / page_size);
      return wide(page) * wide(page_size) + wide(pos - start + start % page_size);
    } else {
      auto page = load(block_table + pos / page_size);
      return wide(page) * wide(page_size) + wide(pos % page_size);
    }
  }();
  auto base = (token * wide(n_kv_heads) + wide(kv_head)) * wide(head_dim);
  if constexpr (FULL_D)
    return col(base) + row(wide(arange<D>()));
  else
    return col(base) + row(wide(minimum(arange<D>(), head_dim - 1)));
}

}  // namespace kdsl::kernels
