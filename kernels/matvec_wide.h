// matvec_wide.h - decode matrix-vector product for GPUs: out[n] = W[n,:] . x (+ bias[n]), partial sums kept across K
#pragma once
#include "kernels/common.h"
#include "kernels/swiglu.h"

namespace kdsl::kernels {

// The end of a fused decode product, matvec_wide_fused's and matvec_quantized_wide_fused's:
// the rows' sums y (and the up product's, SWIGLU) scaled by rsqrt(mean(x^2) + eps) from the
// squares summed on the way (NORMED), plus the bias, through SwiGLU, added to out (ADD), and
// stored for the rows rn inside N.
template <bool HAS_BIAS, bool NORMED, bool ADD, bool SWIGLU, class Y, class Up, class Squares, class Rows>
void finish_fused_decode(Y y, Up up, const Squares &squares, Ptr<const f32> bias, Ptr<f32> out, const Rows &rn, Scalar<i32> N, Scalar<i32> K,
                         Scalar<f32> eps) {
  if constexpr (NORMED) {
    auto inv_rms = rsqrt(sum(squares) / cast<f32>(K) + eps);
    y = y * inv_rms, up = up * inv_rms;
  }
  if constexpr (HAS_BIAS) y = y + load(bias + minimum(rn, N - 1));
  if constexpr (SWIGLU) y = silu_times(y, up);
  if constexpr (ADD) y = y + load(out + rn, rn < N, 0);
  store(out + rn, y, rn < N);
}

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
//   SWIGLU: W holds 2N rows, the gate's then the up product's (placed back to back), and
//     out[n] = silu(W[n,:] . y) * (W[N + n,:] . y) for n < N: the feed-forward's gate, up and
//     SwiGLU in one launch.
//
// x's elements are X: f32, or the weights' f16 / bf16 where the producer of x wrote those
// (Library::product_input_type); each is widened to f32 as it is loaded.
template <class T, int BN, int BK, bool HAS_BIAS, bool NORMED, bool ADD, bool SWIGLU = false, class X = f32>
void matvec_wide_fused(Ptr<const X> x, Ptr<const f32> norm_w, Ptr<const T> w, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> N, Scalar<i32> K,
                       Scalar<f32> eps) {
  auto rn = program_id(0) * BN + arange<BN>();
  auto rows = w + col(wide(minimum(rn, N - 1)) * wide(K));  // [BN, 1] row starts
  auto up_rows = rows + wide(N) * wide(K);                  // SWIGLU: the up product's rows
  auto rk = arange<BK>();
  auto k_main = K - K % BK;
  // One step: the [BN, BK] products added to the partial sums (and the up product's, SWIGLU),
  // x^2 to the squares (NORMED). What a kernel does not fuse is a [1, 1] block carried unchanged.
  auto step = [&](auto k, auto partial, auto partial_up, auto squares, bool masked) {
    auto kk = row(k + rk);
    auto in_k = kk < K;
    auto xs = cast<f32>(masked ? load(x + kk, in_k, 0) : load(x + kk));
    auto wt = cast<f32>(masked ? load(rows + kk, in_k, 0) : load(rows + kk));
    if constexpr (NORMED) {
      squares = squares + xs * xs;
      xs = xs * (masked ? load(norm_w + kk, in_k, 0) : load(norm_w + kk));
    }
    if constexpr (SWIGLU) partial_up = partial_up + cast<f32>(masked ? load(up_rows + kk, in_k, 0) : load(up_rows + kk)) * xs;
    return std::tuple(partial + wt * xs, partial_up, squares);
  };
  auto sums = for_range(0, k_main, BK, zeros<f32, BN, BK>(), zeros<f32, SWIGLU ? BN : 1, SWIGLU ? BK : 1>(), zeros<f32, 1, NORMED ? BK : 1>(),
                        [&](auto k, auto partial, auto partial_up, auto squares) { return step(k, partial, partial_up, squares, false); });
  sums = if_(
      k_main < K, [&] { return step(k_main, std::get<0>(sums), std::get<1>(sums), std::get<2>(sums), true); }, [&] { return sums; });
  auto [partial, partial_up, squares] = sums;
  finish_fused_decode<HAS_BIAS, NORMED, ADD, SWIGLU>(sum<1>(partial), sum<1>(partial_up), squares, bias, out, rn, N, K, eps);
}

// The plain product: out[n] = W[n,:] . x (+ bias[n]).
template <class T, int BN, int BK, bool HAS_BIAS, class X = f32>
void matvec_wide(Ptr<const X> x, Ptr<const T> w, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> N, Scalar<i32> K) {
  matvec_wide_fused<T, BN, BK, HAS_BIAS, false, false, false, X>(x, bias, w, bias, out, N, K, full<f32>(0.0f));  // no norm: the bias stands for its unread weights
}

}  // namespace kdsl::kernels
