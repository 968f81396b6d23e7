// kv_move.h - moves rows of a paged KV cache from one position to another, in order: a token tree's accepted branch into place
#pragma once
#include "kernels/kv_element.h"

namespace kdsl::kernels {

// moves[2m], moves[2m + 1] = (from, to) positions; the moves are applied in order m = 0, 1,
// ... (a later move may read a row an earlier one wrote). Program h copies kv head h's vector
// of every move (its stored bits, as the element policies KP and VP lay them out:
// kv_element.h), so the order holds within each program, and programs touch disjoint vectors.
// D is a block of at least head_dim columns.
template <int D, class KP = KvPlain<f32>, class VP = KvPlain<f32>>
void kv_move(Ptr<typename KP::Storage> k_pages, Ptr<typename VP::Storage> v_pages, Ptr<const i32> block_table, Ptr<const i32> moves, Scalar<i32> n_moves,
             Scalar<i32> n_kv_heads, Scalar<i32> head_dim, Scalar<i32> page_size) {
  auto kv_head = program_id(0);
  for_range(0, n_moves, 1, [&](auto m) {
    auto from = load(moves + m * 2), to = load(moves + m * 2 + 1);
    auto from_page = wide(load(block_table + from / page_size)), to_page = wide(load(block_table + to / page_size));
    auto from_slot = wide(from % page_size), to_slot = wide(to % page_size);
    KP::template copy_head<D>(k_pages, from_page, from_slot, to_page, to_slot, page_size, n_kv_heads, head_dim, kv_head);
    VP::template copy_head<D>(v_pages, from_page, from_slot, to_page, to_slot, page_size, n_kv_heads, head_dim, kv_head);
  });
}

}  // namespace kdsl::kernels
