// attention_prefill.h - fused causal flash attention of a block of query rows over a paged KV cache
#pragma once
#include "kernels/paged_kv.h"

namespace kdsl::kernels {

// Program (i, h) attends query rows i*BM .. i*BM+BM-1 (positions pos0 + row) of head h to
// the cached positions 0 .. last row's position, BN at a time, causally (a row sees the
// positions up to its own) with an online softmax. Head h reads kv head h / group. q and out
// are [rows][n_heads][head_dim].
template <int BM, int BN, int D, bool TILE_IN_PAGE, bool FULL_D>
void attention_prefill(Ptr<const f32> q, Ptr<const f32> k_pages, Ptr<const f32> v_pages, Ptr<const i32> block_table, Ptr<f32> out, Scalar<i32> rows,
                       Dynamic<i32> pos0, Scalar<i32> n_heads, Scalar<i32> group, Scalar<i32> n_kv_heads, Scalar<i32> head_dim,
                       Scalar<i32> page_size, Scalar<f32> scale) {
  auto h = program_id(1);
  auto kv_head = h / group;
  auto r = program_id(0) * BM + arange<BM>();
  auto d = arange<D>();
  auto q_pos = pos0 + r;
  auto io_offs = col(wide(r * n_heads + h) * wide(head_dim)) + row(wide(d));  // [BM, D]
  auto io_mask = col(r < rows) && row(d < head_dim);
  auto qv = load(q + io_offs, io_mask, 0) * scale;
  auto end = pos0 + minimum(program_id(0) * BM + BM, rows);  // keys needed: positions < end
  auto t = arange<BN>();
  auto [m, l, acc] =
      for_range(0, end, BN, full<f32, BM>(-inf<f32>()), zeros<f32, BM>(), zeros<f32, BM, D>(), [&](auto start, auto m, auto l, auto acc) {
        auto pos = start + t;
        auto offs = paged_offsets<BN, D, TILE_IN_PAGE, FULL_D>(block_table, start, end, page_size, n_kv_heads, head_dim, kv_head);
        auto kt = load(k_pages + offs);  // [BN, D], clamped: no mask
        auto vt = load(v_pages + offs);
        auto s = sum<2>(expand_dims<1>(qv) * expand_dims<0>(kt));  // [BM, BN]
        s = where(row(pos) <= col(q_pos) && row(pos < end), s, -inf<f32>());
        auto m_new = maximum(m, max<1>(s));
        auto p = exp(s - col(m_new));
        auto alpha = exp(m - m_new);
        return std::tuple(m_new, l * alpha + sum<1>(p), dot(p, vt, acc * col(alpha)));
      });
  store(out + io_offs, acc / col(l), io_mask);
}

}  // namespace kdsl::kernels
