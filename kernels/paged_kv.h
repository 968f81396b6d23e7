// paged_kv.h - addressing a paged KV cache from kernels: which page and slot hold each position, which columns of a head a tile reads
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// Where BT positions live: each one's page (from the sequence's block table) and slot in it.
// How a page lays out its slots is the element policy's (kv_element.h).
template <int BT>
struct PagedSlots {
  Block<i64, BT> page, slot;
};

// The pages and slots of positions start .. start + BT - 1. Positions from `end` on are
// clamped to the last valid one, so every address is readable: the loads need no mask, their
// address math stays unconditional (hoisted out of the inner loop), and callers mask the scores
// of positions >= end. TILE_IN_PAGE: start is a multiple of BT and page_size of BT, so the
// tile lies in one page and the table is read once; otherwise once per position.
template <int BT, bool TILE_IN_PAGE>
PagedSlots<BT> paged_slots(const Ptr<const i32> &block_table, const Scalar<i32> &start, const Scalar<i32> &end, const Scalar<i32> &page_size) {
  auto pos = minimum(start + arange<BT>(), end - 1);
  if constexpr (TILE_IN_PAGE) {
    auto page = wide(load(block_table + start / page_size));
    return {broadcast_to<BT>(page), wide(pos - start + start % page_size)};
  } else {
    return {wide(load(block_table + pos / page_size)), wide(pos % page_size)};
  }
}

// The D columns of a head a tile reads: 0 .. D - 1, with those from head_dim on clamped to
// head_dim - 1 unless FULL_D says head_dim == D (then the offsets stay affine, so rows load as
// vectors). Callers ignore the clamped columns (their query entries are zero).
template <int D, bool FULL_D>
Block<i32, D> head_columns(const Scalar<i32> &head_dim) {
  if constexpr (FULL_D)
    return arange<D>();
  else
    return minimum(arange<D>(), head_dim - 1);
}

}  // namespace kdsl::kernels
