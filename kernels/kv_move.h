// kv_move.h - moves rows of a paged KV cache from one position to another, in order: a token tree's accepted branch into place
#pragma once
#include "kernels/kv_element.h"

namespace kdsl::kernels {

// moves[2m], moves[2m + 1] = (from, to) positions; the moves are applied in order m = 0, 1,
// ... (a later move may read a row an earlier one wrote). Program j copies columns
// j*BLOCK .. of every move (their stored bits, as the element policies KP and VP lay them
// out: kv_element.h), so the order holds within each program, and programs touch disjoint
// columns.
template <int BLOCK, class KP = KvPlain<f32>, class VP = KvPlain<f32>>
void kv_move(Ptr<typename KP::Storage> k_pages, Ptr<typename VP::Storage> v_pages, Ptr<const i32> block_table, Ptr<const i32> moves, Scalar<i32> n_moves,
             Scalar<i32> row, Scalar<i32> page_size) {
  auto c0 = program_id(0) * BLOCK;
  for_range(0, n_moves, 1, [&](auto m) {
    auto from = load(moves + m * 2), to = load(moves + m * 2 + 1);
    auto from_page = wide(load(block_table + from / page_size)), to_page = wide(load(block_table + to / page_size));
    auto from_slot = wide(from % page_size), to_slot = wide(to % page_size);
    KP::template copy_row<BLOCK>(k_pages, from_page, from_slot, to_page, to_slot, page_size, row, c0);
    VP::template copy_row<BLOCK>(v_pages, from_page, from_slot, to_page, to_slot, page_size, row, c0);
  });
}

}  // namespace kdsl::kernels
