// flash_attention.h - attention's forward pass over [heads][seq][D] f16/bf16 tensors without the score matrix: FlashAttention-2's loop, the kernel Triton's tutorial times
#pragma once
#include <kdsl/kdsl.h>

#include <tuple>

namespace examples {
using namespace kdsl;

// out = softmax(q k^T * scale) v for every head (grid axis 1), BM query rows a program (axis
// 0), the keys BN at a time with a running maximum m, sum l and weighted sum acc per row (f32).
// Scores are taken in base 2 (scale times log2(e), then exp2), as the fast exponential is.
// CAUSAL: a row sees the keys up to its own position, and the loop stops at the program's last
// row. `seq` need not be a multiple of BM or BN: rows and keys past it are masked.
// One step of keys for the BM query rows: scores, the causal or length mask, the running
// maximum m and sum l rescaled, and acc += P V. kt and vt are the step's BN keys and values
// (rows past seq are masked here, whatever they hold, so they must only be finite).
template <class T, bool CAUSAL, class Q, class K, class V, class Rows, class Keys, class Len, class Scale, class M, class L, class Acc>
auto attention_step(const Q &qv, const K &kt, const V &vt, const Rows &q_rows, const Keys &keys, const Len &seq, const Scale &log2_scale, const M &m,
                    const L &l, const Acc &acc) {
  auto s = dot(qv, trans(kt)) * log2_scale;  // [BM, BN]
  auto key = expand_dims<0>(keys);           // [1, BN]
  s = CAUSAL ? where(key <= q_rows && key < seq, s, -inf<f32>()) : where(key < seq, s, -inf<f32>());
  auto m_new = maximum(m, max<1>(s));
  auto p = exp2(s - expand_dims<1>(m_new));
  auto alpha = exp2(m - m_new);
  return std::tuple(m_new, l * alpha + sum<1>(p), dot(cast<T>(p), vt, acc * expand_dims<1>(alpha)));
}

template <class T, int BM, int BN, int D, bool CAUSAL>
void flash_attention(Ptr<const T> q, Ptr<const T> k, Ptr<const T> v, Ptr<T> out, Scalar<i32> seq, Scalar<f32> scale) {
  auto head = program_id(1) * seq * D;
  auto q_rows = expand_dims<1>(program_id(0) * BM + arange<BM>());  // [BM, 1]
  auto d = expand_dims<0>(arange<D>());                             // [1, D]
  auto qv = load(q + head + q_rows * D + d, q_rows < seq, 0);
  auto log2_scale = scale * 1.4426950408889634f;
  auto keys_end = CAUSAL ? minimum(program_id(0) * BM + BM, seq) : seq;
  auto t = arange<BN>();
  auto [m, l, acc] = for_range(0, keys_end, BN, full<f32, BM>(-inf<f32>()), zeros<f32, BM>(), zeros<f32, BM, D>(),
                               [&](auto start, auto m, auto l, auto acc) {
    auto keys = start + t;
    auto k_rows = expand_dims<1>(keys);  // [BN, 1]
    auto kt = load(k + head + k_rows * D + d, k_rows < seq, 0);
    auto vt = load(v + head + k_rows * D + d, k_rows < seq, 0);
    return attention_step<T, CAUSAL>(qv, kt, vt, q_rows, keys, seq, log2_scale, m, l, acc);
  });
  store(out + head + q_rows * D + d, cast<T>(acc / expand_dims<1>(l)), q_rows < seq);
}

// The same with K and V read through tensor descriptors over all heads' rows ([rows][D],
// rows = heads * seq, as Triton's tutorial describes them), so that sm_90a copies their tiles
// with TMA. A step's keys past seq are the next head's rows (or zeros past the last head):
// the length mask drops them.
template <class T, int BM, int BN, int D, bool CAUSAL>
void flash_attention_descriptor(Ptr<const T> q, Ptr<const T> k, Ptr<const T> v, Ptr<T> out, Scalar<i32> seq, Scalar<i32> rows, Scalar<f32> scale) {
  auto head = program_id(1) * seq * D;
  auto head_row = program_id(1) * seq;
  auto q_rows = expand_dims<1>(program_id(0) * BM + arange<BM>());  // [BM, 1]
  auto d = expand_dims<0>(arange<D>());                             // [1, D]
  auto qv = load(q + head + q_rows * D + d, q_rows < seq, 0);
  auto keys_desc = make_tensor_descriptor(k, rows, D, D);
  auto values_desc = make_tensor_descriptor(v, rows, D, D);
  auto log2_scale = scale * 1.4426950408889634f;
  auto keys_end = CAUSAL ? minimum(program_id(0) * BM + BM, seq) : seq;
  auto t = arange<BN>();
  auto [m, l, acc] = for_range(0, keys_end, BN, full<f32, BM>(-inf<f32>()), zeros<f32, BM>(), zeros<f32, BM, D>(),
                               [&](auto start, auto m, auto l, auto acc) {
    auto kt = keys_desc.template load<BN, D>(head_row + start, 0);
    auto vt = values_desc.template load<BN, D>(head_row + start, 0);
    return attention_step<T, CAUSAL>(qv, kt, vt, q_rows, start + t, seq, log2_scale, m, l, acc);
  });
  store(out + head + q_rows * D + d, cast<T>(acc / expand_dims<1>(l)), q_rows < seq);
}

}  // namespace examples
