// paged_kv.h - addressing a paged KV cache from kernels: where each position's row of a kv head lives
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// Element offsets [BT, D] of head `kv_head`'s key (or value) vectors for positions `pos` in a
// cache of pages [num_pages][page_size][n_kv_heads][head_dim], through the sequence's block
// table; positions where `valid` is false read page 0 (their loads are masked anyway).
template <int BT, int D>
Block<i64, BT, D> paged_offsets(const Ptr<i32> &block_table, const Block<i32, BT> &pos, const Block<boolean, BT> &valid,
                                const Scalar<i32> &page_size, const Scalar<i32> &n_kv_heads, const Scalar<i32> &head_dim,
                                const Scalar<i32> &kv_head) {
  auto page = load(block_table + pos / page_size, valid, 0);
  auto token = wide(page) * wide(page_size) + wide(pos % page_size);
  auto base = (token * wide(n_kv_heads) + wide(kv_head)) * wide(head_dim);
  return col(base) + row(wide(arange<D>()));
}

}  // namespace kdsl::kernels
