// kv_append.h - writes new key and value rows into a paged KV cache through the block table
#pragma once
#include "kernels/kv_element.h"

namespace kdsl::kernels {

// One token's keys (or values) are row = n_kv_heads * head_dim f32 values. Program (r, j)
// writes columns j*BLOCK .. of token r (position pos0 + r) into slot pos % page_size of page
// block_table[pos / page_size], stored as the element policies KP and VP say (kv_element.h:
// f32, f16, bf16 or Q8_0 pages). pos0 is Dynamic (one compiled kernel for every position).
template <int BLOCK, class KP = KvPlain<f32>, class VP = KvPlain<f32>>
void kv_append(Ptr<const f32> k, Ptr<const f32> v, Ptr<typename KP::Storage> k_pages, Ptr<typename VP::Storage> v_pages, Ptr<const i32> block_table,
               Dynamic<i32> pos0, Scalar<i32> row, Scalar<i32> page_size) {
  auto r = program_id(0);
  auto c0 = program_id(1) * BLOCK;
  auto c = c0 + arange<BLOCK>();
  auto mask = c < row;
  auto pos = pos0 + r;
  auto page = wide(load(block_table + pos / page_size));
  auto slot = wide(pos % page_size);
  auto src = wide(r) * wide(row);
  KP::template store_row<BLOCK>(k_pages, page, slot, page_size, row, c0, load(k + src + c, mask, 0));
  VP::template store_row<BLOCK>(v_pages, page, slot, page_size, row, c0, load(v + src + c, mask, 0));
}

}  // namespace kdsl::kernels
