// attention_decode.h - one query token over a paged KV cache: split-K programs and their combine
#pragma once
#include "kernels/kv_element.h"

namespace kdsl::kernels {

// Program (kv_head, split) attends the G query heads that share kv_head (group <= G of them)
// to the positions split * split_len .. min((split + 1) * split_len, ctx) - 1, BT positions
// at a time, with an online softmax. It writes its normalized output (acc / l) to
// part_out[(head * num_splits + split) * head_dim ..] and its running max and sum to
// part_ml[(head * num_splits + split) * 2 + {0, 1}]. With one split, part_out laid out
// [n_heads][head_dim] is the final output. split_len is a multiple of BT (so with
// TILE_IN_PAGE each step lies in one page). A split past the context attends to nothing and
// writes l = 0 (its output is then 0 / 0), which the combine leaves out. Keys and values are
// stored as the element policies KP and VP say (kv_element.h: the KV cache's types) and read
// as f32.
template <int G, int D, int BT, bool TILE_IN_PAGE, bool FULL_D, class KP, class VP>
void attend_split(Ptr<const f32> q, Ptr<const typename KP::Storage> k_pages, Ptr<const typename VP::Storage> v_pages, Ptr<const i32> block_table,
                  Ptr<f32> part_out, Ptr<f32> part_ml, Scalar<i32> ctx, Scalar<i32> group, Scalar<i32> n_kv_heads, Scalar<i32> head_dim,
                  Scalar<i32> page_size, Scalar<i32> split_len, Scalar<f32> scale) {
  auto kv_head = program_id(0);
  auto split = program_id(1);
  auto num_splits = num_programs(1);
  auto g = arange<G>();
  auto d = arange<D>();
  auto head = kv_head * group + g;
  auto q_mask = col(g < group) && row(d < head_dim);
  auto qv = load(q + col(head * head_dim) + row(d), q_mask, 0) * scale;  // [G, D]
  auto first = split * split_len;
  auto last = minimum(first + split_len, ctx);
  auto t = arange<BT>();
  auto [m, l, acc] =
      for_range(first, last, BT, full<f32, G>(-inf<f32>()), zeros<f32, G>(), zeros<f32, G, D>(), [&](auto start, auto m, auto l, auto acc) {
        auto pos = start + t;
        auto valid = pos < last;
        auto at = paged_slots<BT, TILE_IN_PAGE>(block_table, start, last, page_size);
        auto kt = KP::template load_head<BT, D, FULL_D>(k_pages, at, page_size, n_kv_heads, head_dim, kv_head);  // [BT, D], clamped: no mask
        auto vt = VP::template load_head<BT, D, FULL_D>(v_pages, at, page_size, n_kv_heads, head_dim, kv_head);
        auto s = sum<2>(expand_dims<1>(qv) * expand_dims<0>(kt));  // [G, BT]
        s = where(row(valid), s, -inf<f32>());
        auto m_new = maximum(m, max<1>(s));
        auto p = exp(s - col(m_new));
        auto alpha = exp(m - m_new);
        return std::tuple(m_new, l * alpha + sum<1>(p), dot(p, vt, acc * col(alpha)));
      });
  auto slot = head * num_splits + split;  // [G]
  auto g_mask = g < group;
  store(part_out + col(slot * head_dim) + row(d), acc / col(l), q_mask);
  store(part_ml + slot * 2, m, g_mask);
  store(part_ml + slot * 2 + 1, l, g_mask);
}

// Positions 0 .. ctx - 1 are visible, split_len positions per split (every split holding at
// least one, as the dispatch chooses them). ctx changes every step, so it is Dynamic (one
// compiled kernel).
template <int G, int D, int BT, bool TILE_IN_PAGE, bool FULL_D, class KP = KvPlain<f32>, class VP = KvPlain<f32>>
void attention_decode(Ptr<const f32> q, Ptr<const typename KP::Storage> k_pages, Ptr<const typename VP::Storage> v_pages, Ptr<const i32> block_table,
                      Ptr<f32> part_out, Ptr<f32> part_ml, Dynamic<i32> ctx, Scalar<i32> group, Scalar<i32> n_kv_heads, Scalar<i32> head_dim,
                      Scalar<i32> page_size, Scalar<i32> split_len, Scalar<f32> scale) {
  attend_split<G, D, BT, TILE_IN_PAGE, FULL_D, KP, VP>(q, k_pages, v_pages, block_table, part_out, part_ml, ctx, group, n_kv_heads, head_dim,
                                                       page_size, split_len, scale);
}

// The query token at position position[0], read from device memory, so that the launch does
// not change with the position (a decode step captured once as a kdsl::LaunchGraph): positions
// 0 .. position[0] are visible (at most max_ctx of them), split evenly over the grid's splits
// in whole steps of BT; the splits past the context attend to nothing.
template <int G, int D, int BT, bool TILE_IN_PAGE, bool FULL_D, class KP = KvPlain<f32>, class VP = KvPlain<f32>>
void attention_decode_at(Ptr<const f32> q, Ptr<const typename KP::Storage> k_pages, Ptr<const typename VP::Storage> v_pages,
                         Ptr<const i32> block_table, Ptr<f32> part_out, Ptr<f32> part_ml, Ptr<const i32> position, Scalar<i32> max_ctx,
                         Scalar<i32> group, Scalar<i32> n_kv_heads, Scalar<i32> head_dim, Scalar<i32> page_size, Scalar<f32> scale) {
  auto ctx = minimum(load(position) + 1, max_ctx);
  auto num_splits = num_programs(1);
  auto split_len = (ctx + num_splits * BT - 1) / (num_splits * BT) * BT;  // whole steps, so steps stay inside pages
  attend_split<G, D, BT, TILE_IN_PAGE, FULL_D, KP, VP>(q, k_pages, v_pages, block_table, part_out, part_ml, ctx, group, n_kv_heads, head_dim,
                                                       page_size, split_len, scale);
}

// Program h merges head h's num_splits (<= S) partial outputs: each split's normalized output
// weighs exp(m_split - m_max) * l_split; a split that attended to nothing (l = 0) is left out.
template <int S, int D>
void attention_combine(Ptr<const f32> part_out, Ptr<const f32> part_ml, Ptr<f32> out, Scalar<i32> num_splits, Scalar<i32> head_dim) {
  auto h = program_id(0);
  auto s = arange<S>();
  auto d = arange<D>();
  auto slot = h * num_splits + s;
  auto l = load(part_ml + slot * 2 + 1, s < num_splits, 0);
  auto live = l > 0;
  auto m = load(part_ml + slot * 2, live, -inf<f32>());
  auto weight = where(live, exp(m - max(m)) * l, 0.0f);
  auto o = load(part_out + col(slot * head_dim) + row(d), col(live) && row(d < head_dim), 0);  // [S, D]
  auto merged = sum<0>(o * col(weight)) / sum(weight);
  store(out + h * head_dim + d, merged, d < head_dim);
}

}  // namespace kdsl::kernels
