// matvec_wide.h - decode matrix-vector product for GPUs: out[n] = W[n,:] . x (+ bias[n]), partial sums kept across K
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// matvec.h reduces each [BN, BK] tile of products to [BN] inside the loop. On a GPU that is a
// cross-thread reduction (shuffles, and shared memory with a barrier across warps) for every
// few kilobytes of weights, and the next step's loads wait behind it. Here each thread keeps
// its [BN, BK] share of f32 partial sums in registers across the whole K loop and the block
// is reduced once after it, so the loop body is loads and FMAs only: wide, coalesced loads of
// BN neighbouring rows with nothing serialising the steps. BK sets the bytes each thread has
// in flight per step (BN * BK * sizeof(T) / threads). Rows past N are clamped and their
// stores masked; the columns past the last whole BK block are one masked step.
//
// matvec_wide_fused also takes the steps around a decode product in a transformer layer, for
// a GPU, where each small kernel costs a launch, a pass over the row and the wait between:
//   NORMED: the product takes rmsnorm(x) = x * rsqrt(mean(x^2) + eps) * norm_w instead of x
//     (the norm before q, k, v, before gate and up, and before the logits). Each program reads
//     all of x anyway, so it sums x^2 on the way and scales its sums once at the end:
//     out[n] = rsqrt(mean(x^2) + eps) * sum_k W[n,k] x[k] norm_w[k].
//   ADD: out[n] += the product (the residual stream after the attention output and the down
//     product; each output is read and written by its own program).
template <class T, int BN, int BK, bool HAS_BIAS, bool NORMED, bool ADD>
void matvec_wide_fused(Ptr<const f32> x, Ptr<const f32> norm_w, Ptr<const T> w, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> N, Scalar<i32> K,
                       Scalar<f32> eps) {
  auto rn = program_id(0) * BN + arange<BN>();
  auto rows = w + col(wide(minimum(rn, N - 1)) * wide(K));  // [BN, 1] row starts
  auto rk = arange<BK>();
  auto k_main = K - K % BK;
  // One step: the [BN, BK] products added to the partial sums, x^2 to the squares (NORMED;
  // otherwise a [1, 1] block carried unchanged).
  auto step = [&](auto k, auto partial, auto squares, bool masked) {
    auto kk = row(k + rk);
    auto in_k = kk < K;
    auto xs = masked ? load(x + kk, in_k, 0) : load(x + kk);
    auto wt = cast<f32>(masked ? load(rows + kk, in_k, 0) : load(rows + kk));
    if constexpr (NORMED) {
      squares = squares + xs * xs;
      xs = xs * (masked ? load(norm_w + kk, in_k, 0) : load(norm_w + kk));
    }
    return std::tuple(partial + wt * xs, squares);
  };
  auto squares0 = zeros<f32, 1, NORMED ? BK : 1>();
  auto sums = for_range(0, k_main, BK, zeros<f32, BN, BK>(), squares0, [&](auto k, auto partial, auto squares) { return step(k, partial, squares, false); });
  sums = if_(
      k_main < K, [&] { return step(k_main, std::get<0>(sums), std::get<1>(sums), true); }, [&] { return sums; });
  auto [partial, squares] = sums;
  auto acc = sum<1>(partial);
  if constexpr (NORMED) acc = acc * rsqrt(sum(squares) / cast<f32>(K) + eps);
  if constexpr (HAS_BIAS) acc = acc + load(bias + minimum(rn, N - 1));
  if constexpr (ADD) acc = acc + load(out + rn, rn < N, 0);
  store(out + rn, acc, rn < N);
}

// The plain product: out[n] = W[n,:] . x (+ bias[n]).
template <class T, int BN, int BK, bool HAS_BIAS>
void matvec_wide(Ptr<const f32> x, Ptr<const T> w, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> N, Scalar<i32> K) {
  matvec_wide_fused<T, BN, BK, HAS_BIAS, false, false>(x, x, w, bias, out, N, K, full<f32>(0.0f));  // no norm: x stands for its unread weights
}

}  // namespace kdsl::kernels
