// attention_prefill.h - fused flash attention of a block of query rows over a paged KV cache: causal, or along the branches of a token tree
#pragma once
#include <type_traits>

#include "kernels/kv_element.h"

namespace kdsl::kernels {

// Program (i, h) attends query rows i*BM .. i*BM+BM-1 (in cache slots pos0 + row) of head h
// to the cached slots 0 .. the last row's, BN at a time, with an online softmax; visible(slot,
// r) ([1, BN] slots, [BM] rows) says which slots each row sees. Head h reads kv head
// h / group. q and out are [rows][n_heads][head_dim]; keys and values are stored as the element
// policies KP and VP say (kv_element.h: the KV cache's types), and FORM says how a step's
// scores and the values' product are taken (attention_dispatch_impl.h picks it):
//   kRowsReduced: keys and values read as f32, the scores [BM, BN] each q row against each
//     key row, reduced along head_dim (a GPU's f32 and q8_0 caches);
//   kTensorCores: keys and values read as stored (a GPU's f16 or bf16 cache), the scores one
//     dot of q rounded to the cache's type with the keys, the values' product one dot of P
//     rounded so, both accumulating in f32, as FlashAttention and Triton's tutorial take them;
//   kTransposed (the host): keys and values read as f32, the scores transposed, [BN, BM], one
//     dot of the keys by q's columns, stored once before the loop. The host's f32 dot tiles
//     vectorize along C's rows (here the query rows, every lane useful) and broadcast A's
//     elements (the keys'), the softmax's max and sum over the keys are vector adds down the
//     columns, and the values' dot reads P's elements from P^T as its broadcast A. Reduced
//     along head_dim, each score ended in a horizontal sum of its vector (bench/RESULTS.md,
//     2026-12-07, "the host's prefill attention takes its scores transposed").
enum class ScoreForm { kRowsReduced, kTensorCores, kTransposed };

template <class KP, class VP>
constexpr bool kTensorCoreCache = std::is_same_v<KP, VP> && (std::is_same_v<KP, KvPlain<f16>> || std::is_same_v<KP, KvPlain<bf16>>);

template <int BM, int BN, int D, bool TILE_IN_PAGE, bool FULL_D, class KP, class VP, ScoreForm FORM, class Visible>
void flash_attention_rows(Ptr<const f32> q, Ptr<const typename KP::Storage> k_pages, Ptr<const typename VP::Storage> v_pages,
                          Ptr<const i32> block_table, Ptr<f32> out, Scalar<i32> rows, Scalar<i32> pos0, Scalar<i32> n_heads, Scalar<i32> group,
                          Scalar<i32> n_kv_heads, Scalar<i32> head_dim, Scalar<i32> page_size, Scalar<f32> scale, const Visible &visible) {
  auto h = program_id(1);
  auto kv_head = h / group;
  auto r = program_id(0) * BM + arange<BM>();
  auto d = arange<D>();
  auto io_offs = col(wide(r * n_heads + h) * wide(head_dim)) + row(wide(d));  // [BM, D]
  auto io_mask = col(r < rows) && row(d < head_dim);
  auto q_in = load(q + io_offs, io_mask, 0);
  auto q_dot = [&] {  // q as the scores read it, scaled (and rounded, or transposed) once, before the loop
    if constexpr (FORM == ScoreForm::kTensorCores) return cast<typename KP::Storage>(q_in * scale);
    // [D, BM]: the multiply is stored before the loop, where a bare trans() would be copied into every step's dot
    else if constexpr (FORM == ScoreForm::kTransposed) return trans(q_in) * scale;
    else return q_in * scale;
  }();
  auto end = pos0 + minimum(program_id(0) * BM + BM, rows);  // slots needed: < end
  auto t = arange<BN>();
  auto [m, l, acc] =
      for_range(0, end, BN, full<f32, BM>(-inf<f32>()), zeros<f32, BM>(), zeros<f32, BM, D>(), [&](auto start, auto m, auto l, auto acc) {
        auto slot = start + t;
        auto at = paged_slots<BN, TILE_IN_PAGE>(block_table, start, end, page_size);
        // Which of this step's slots each row sees, [BM, BN].
        auto seen = [&] { return visible(row(slot), r) && row(slot < end); };
        // [BN, D] keys and values, clamped: no mask.
        auto step = [&](const auto &s_raw, const auto &vt, auto &&round_p) {
          auto s = where(seen(), s_raw, -inf<f32>());  // [BM, BN]
          auto m_new = maximum(m, max<1>(s));
          auto p = exp(s - col(m_new));
          auto alpha = exp(m - m_new);
          return std::tuple(m_new, l * alpha + sum<1>(p), dot(round_p(p), vt, acc * col(alpha)));
        };
        if constexpr (FORM == ScoreForm::kTensorCores) {
          using Stored = typename KP::Storage;
          auto kt = KP::template load_head_stored<BN, D, FULL_D>(k_pages, at, page_size, n_kv_heads, head_dim, kv_head);
          auto vt = VP::template load_head_stored<BN, D, FULL_D>(v_pages, at, page_size, n_kv_heads, head_dim, kv_head);
          return step(dot(q_dot, trans(kt)), vt, [](const auto &p) { return cast<Stored>(p); });
        } else {
          auto kt = KP::template load_head<BN, D, FULL_D>(k_pages, at, page_size, n_kv_heads, head_dim, kv_head);
          auto vt = VP::template load_head<BN, D, FULL_D>(v_pages, at, page_size, n_kv_heads, head_dim, kv_head);
          if constexpr (FORM == ScoreForm::kTransposed) {  // step's softmax down the columns of S^T
            auto s = where(trans(seen()), dot(kt, q_dot), -inf<f32>());  // [BN, BM]
            auto m_new = maximum(m, max<0>(s));
            auto p = exp(s - row(m_new));  // P^T
            auto alpha = exp(m - m_new);
            return std::tuple(m_new, l * alpha + sum<0>(p), dot(trans(p), vt, acc * col(alpha)));
          } else {
            return step(sum<2>(expand_dims<1>(q_dot) * expand_dims<0>(kt)), vt, [](const auto &p) { return p; });
          }
        }
      });
  store(out + io_offs, acc / col(l), io_mask);
}

// Causal: row r (position pos0 + r) sees the positions up to its own.
template <int BM, int BN, int D, bool TILE_IN_PAGE, bool FULL_D, class KP, class VP, ScoreForm FORM>
void causal_attention_rows(Ptr<const f32> q, Ptr<const typename KP::Storage> k_pages, Ptr<const typename VP::Storage> v_pages,
                           Ptr<const i32> block_table, Ptr<f32> out, Scalar<i32> rows, Scalar<i32> pos0, Scalar<i32> n_heads, Scalar<i32> group,
                           Scalar<i32> n_kv_heads, Scalar<i32> head_dim, Scalar<i32> page_size, Scalar<f32> scale) {
  flash_attention_rows<BM, BN, D, TILE_IN_PAGE, FULL_D, KP, VP, FORM>(q, k_pages, v_pages, block_table, out, rows, pos0, n_heads, group, n_kv_heads,
                                                                              head_dim, page_size, scale,
                                                                              [&](const auto &slot, const auto &r) { return slot <= col(pos0 + r); });
}

// pos0 is Dynamic (one compiled kernel for every position).
template <int BM, int BN, int D, bool TILE_IN_PAGE, bool FULL_D, class KP = KvPlain<f32>, class VP = KvPlain<f32>, ScoreForm FORM = ScoreForm::kRowsReduced>
void attention_prefill(Ptr<const f32> q, Ptr<const typename KP::Storage> k_pages, Ptr<const typename VP::Storage> v_pages,
                       Ptr<const i32> block_table, Ptr<f32> out, Scalar<i32> rows, Dynamic<i32> pos0, Scalar<i32> n_heads, Scalar<i32> group,
                       Scalar<i32> n_kv_heads, Scalar<i32> head_dim, Scalar<i32> page_size, Scalar<f32> scale) {
  causal_attention_rows<BM, BN, D, TILE_IN_PAGE, FULL_D, KP, VP, FORM>(q, k_pages, v_pages, block_table, out, rows, pos0, n_heads, group,
                                                                               n_kv_heads, head_dim, page_size, scale);
}

// The first row's position read from memory (position[0]): a launch that does not change with
// the position, for a speculative check captured once (kdsl::LaunchGraph).
template <int BM, int BN, int D, bool TILE_IN_PAGE, bool FULL_D, class KP = KvPlain<f32>, class VP = KvPlain<f32>, ScoreForm FORM = ScoreForm::kRowsReduced>
void attention_prefill_at(Ptr<const f32> q, Ptr<const typename KP::Storage> k_pages, Ptr<const typename VP::Storage> v_pages,
                          Ptr<const i32> block_table, Ptr<const i32> position, Ptr<f32> out, Scalar<i32> rows, Scalar<i32> n_heads, Scalar<i32> group,
                          Scalar<i32> n_kv_heads, Scalar<i32> head_dim, Scalar<i32> page_size, Scalar<f32> scale) {
  causal_attention_rows<BM, BN, D, TILE_IN_PAGE, FULL_D, KP, VP, FORM>(q, k_pages, v_pages, block_table, out, rows, load(position), n_heads,
                                                                               group, n_kv_heads, head_dim, page_size, scale);
}

// A token tree (rows <= 64, one per node, node r in slot pos0 + r, parents before children):
// row r sees every slot before pos0 (the text so far) and the slots of the rows set in
// ancestors[r] (bit j: row j is r itself or one of its ancestors), so each node attends along
// its own branch only, as if that branch had been run alone.
template <int BM, int BN, int D, bool TILE_IN_PAGE, bool FULL_D, class KP, class VP, ScoreForm FORM>
void tree_attention_rows(Ptr<const f32> q, Ptr<const typename KP::Storage> k_pages, Ptr<const typename VP::Storage> v_pages,
                         Ptr<const i32> block_table, Ptr<const i64> ancestors, Ptr<f32> out, Scalar<i32> rows, Scalar<i32> first, Scalar<i32> n_heads,
                         Scalar<i32> group, Scalar<i32> n_kv_heads, Scalar<i32> head_dim, Scalar<i32> page_size, Scalar<f32> scale) {
  auto r = program_id(0) * BM + arange<BM>();
  auto bits = col(load(ancestors + minimum(r, rows - 1)));  // [BM, 1]
  flash_attention_rows<BM, BN, D, TILE_IN_PAGE, FULL_D, KP, VP, FORM>(
      q, k_pages, v_pages, block_table, out, rows, first, n_heads, group, n_kv_heads, head_dim, page_size, scale,
      [&](const auto &slot, const auto &) {
        // The shift stays in 0..63 for every slot; slots outside the tree are decided by the
        // first test, or masked as past `end`.
        auto node = wide(minimum(maximum(slot - first, 0), 63));  // [1, BN]
        return slot < first || ((bits >> node) & 1) != 0;
      });
}

// pos0 is Dynamic (one compiled kernel for every position).
template <int BM, int BN, int D, bool TILE_IN_PAGE, bool FULL_D, class KP = KvPlain<f32>, class VP = KvPlain<f32>, ScoreForm FORM = ScoreForm::kRowsReduced>
void attention_tree(Ptr<const f32> q, Ptr<const typename KP::Storage> k_pages, Ptr<const typename VP::Storage> v_pages,
                    Ptr<const i32> block_table, Ptr<const i64> ancestors, Ptr<f32> out, Scalar<i32> rows, Dynamic<i32> pos0, Scalar<i32> n_heads,
                    Scalar<i32> group, Scalar<i32> n_kv_heads, Scalar<i32> head_dim, Scalar<i32> page_size, Scalar<f32> scale) {
  tree_attention_rows<BM, BN, D, TILE_IN_PAGE, FULL_D, KP, VP, FORM>(q, k_pages, v_pages, block_table, ancestors, out, rows, pos0, n_heads,
                                                                             group, n_kv_heads, head_dim, page_size, scale);
}

// The root's slot read from memory (position[0]), for a tree check captured once.
template <int BM, int BN, int D, bool TILE_IN_PAGE, bool FULL_D, class KP = KvPlain<f32>, class VP = KvPlain<f32>, ScoreForm FORM = ScoreForm::kRowsReduced>
void attention_tree_at(Ptr<const f32> q, Ptr<const typename KP::Storage> k_pages, Ptr<const typename VP::Storage> v_pages,
                       Ptr<const i32> block_table, Ptr<const i64> ancestors, Ptr<const i32> position, Ptr<f32> out, Scalar<i32> rows,
                       Scalar<i32> n_heads, Scalar<i32> group, Scalar<i32> n_kv_heads, Scalar<i32> head_dim, Scalar<i32> page_size,
                       Scalar<f32> scale) {
  tree_attention_rows<BM, BN, D, TILE_IN_PAGE, FULL_D, KP, VP, FORM>(q, k_pages, v_pages, block_table, ancestors, out, rows, load(position),
                                                                             n_heads, group, n_kv_heads, head_dim, page_size, scale);
}

}  // namespace kdsl::kernels
