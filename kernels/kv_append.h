// kv_append.h - writes new key and value rows into a paged KV cache through the block table
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// Pages are [num_pages][page_size][row] with row = n_kv_heads * head_dim floats, so one
// token's keys (or values) are `row` contiguous floats. Program (r, j) copies columns
// j*BLOCK .. of token r (position pos0 + r) into slot pos % page_size of page
// block_table[pos / page_size]. pos0 is Dynamic (one compiled kernel for every position). The
// pages store KT and VT (f32, f16 or bf16: the KV cache's types), rounded to nearest even.
template <int BLOCK, class KT = f32, class VT = f32>
void kv_append(Ptr<const f32> k, Ptr<const f32> v, Ptr<KT> k_pages, Ptr<VT> v_pages, Ptr<const i32> block_table, Dynamic<i32> pos0, Scalar<i32> row,
               Scalar<i32> page_size) {
  auto r = program_id(0);
  auto c = program_id(1) * BLOCK + arange<BLOCK>();
  auto mask = c < row;
  auto pos = pos0 + r;
  auto page = load(block_table + pos / page_size);
  auto dst = (wide(page) * wide(page_size) + wide(pos % page_size)) * wide(row);
  auto src = wide(r) * wide(row);
  store(k_pages + dst + c, cast<KT>(load(k + src + c, mask, 0)), mask);
  store(v_pages + dst + c, cast<VT>(load(v + src + c, mask, 0)), mask);
}

}  // namespace kdsl::kernels
