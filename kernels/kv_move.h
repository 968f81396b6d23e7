// kv_move.h - moves rows of a paged KV cache from one position to another, in order: a token tree's accepted branch into place
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// moves[2m], moves[2m + 1] = (from, to) positions; the moves are applied in order m = 0, 1,
// ... (a later move may read a row an earlier one wrote). Program j copies columns
// j*BLOCK .. of every move, so the order holds within each program, and programs touch
// disjoint columns. Pages are [num_pages][page_size][row] of KT and VT, as kv_append writes them.
template <int BLOCK, class KT = f32, class VT = f32>
void kv_move(Ptr<KT> k_pages, Ptr<VT> v_pages, Ptr<const i32> block_table, Ptr<const i32> moves, Scalar<i32> n_moves, Scalar<i32> row,
             Scalar<i32> page_size) {
  auto c = program_id(0) * BLOCK + arange<BLOCK>();
  auto mask = c < row;
  auto slot = [&](auto pos) { return (wide(load(block_table + pos / page_size)) * wide(page_size) + wide(pos % page_size)) * wide(row); };
  for_range(0, n_moves, 1, [&](auto m) {
    auto from = slot(load(moves + m * 2)), to = slot(load(moves + m * 2 + 1));
    store(k_pages + to + c, load(k_pages + from + c, mask, 0), mask);
    store(v_pages + to + c, load(v_pages + from + c, mask, 0), mask);
  });
}

}  // namespace kdsl::kernels
