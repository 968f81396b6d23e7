// kv_append.h - writes new key and value rows into a paged KV cache through the block table
#pragma once
#include "kernels/kv_element.h"

namespace kdsl::kernels {

// One token's keys (or values) are n_kv_heads * head_dim f32 values. Program (r, h) writes kv
// head h's head_dim values of token r (at position `pos`) into slot pos % page_size of page
// block_table[pos / page_size], stored as the element policies KP and VP say (kv_element.h:
// f32, f16, bf16 or Q8_0 pages). D is a block of at least head_dim columns.
template <int D, class KP, class VP>
void append_head(Ptr<const f32> k, Ptr<const f32> v, Ptr<typename KP::Storage> k_pages, Ptr<typename VP::Storage> v_pages, Ptr<const i32> block_table,
                 Scalar<i32> pos, Scalar<i32> n_kv_heads, Scalar<i32> head_dim, Scalar<i32> page_size) {
  auto r = program_id(0);
  auto kv_head = program_id(1);
  auto d = arange<D>();
  auto mask = d < head_dim;
  auto page = wide(load(block_table + pos / page_size));
  auto slot = wide(pos % page_size);
  auto src = (wide(r) * wide(n_kv_heads) + wide(kv_head)) * wide(head_dim);
  KP::template store_head<D>(k_pages, page, slot, page_size, n_kv_heads, head_dim, kv_head, load(k + src + d, mask, 0));
  VP::template store_head<D>(v_pages, page, slot, page_size, n_kv_heads, head_dim, kv_head, load(v + src + d, mask, 0));
}

// Token r at position pos0 + r. pos0 is Dynamic (one compiled kernel for every position).
template <int D, class KP = KvPlain<f32>, class VP = KvPlain<f32>>
void kv_append(Ptr<const f32> k, Ptr<const f32> v, Ptr<typename KP::Storage> k_pages, Ptr<typename VP::Storage> v_pages, Ptr<const i32> block_table,
               Dynamic<i32> pos0, Scalar<i32> n_kv_heads, Scalar<i32> head_dim, Scalar<i32> page_size) {
  append_head<D, KP, VP>(k, v, k_pages, v_pages, block_table, pos0 + program_id(0), n_kv_heads, head_dim, page_size);
}

// Token r at position positions[r], read from device memory: the launch does not change with
// the position, so a decode step captured once (kdsl::LaunchGraph) serves every position.
template <int D, class KP = KvPlain<f32>, class VP = KvPlain<f32>>
void kv_append_at(Ptr<const f32> k, Ptr<const f32> v, Ptr<typename KP::Storage> k_pages, Ptr<typename VP::Storage> v_pages,
                  Ptr<const i32> block_table, Ptr<const i32> positions, Scalar<i32> n_kv_heads, Scalar<i32> head_dim, Scalar<i32> page_size) {
  append_head<D, KP, VP>(k, v, k_pages, v_pages, block_table, load(positions + program_id(0)), n_kv_heads, head_dim, page_size);
}

}  // namespace kdsl::kernels
