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
template <class T, int BN, int BK, bool HAS_BIAS>
void matvec_wide(Ptr<const f32> x, Ptr<const T> w, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> N, Scalar<i32> K) {
  auto rn = program_id(0) * BN + arange<BN>();
  auto rows = w + col(wide(minimum(rn, N - 1)) * wide(K));  // [BN, 1] row starts
  auto rk = arange<BK>();
  auto k_main = K - K % BK;
  auto partial = for_range(0, k_main, BK, zeros<f32, BN, BK>(), [&](auto k, auto partial) {
    auto kk = row(k + rk);
    return partial + cast<f32>(load(rows + kk)) * load(x + kk);
  });
  partial = if_(
      k_main < K,
      [&] {
        auto kk = row(k_main + rk);
        return partial + cast<f32>(load(rows + kk, kk < K, 0)) * load(x + kk, kk < K, 0);
      },
      [&] { return partial; });
  auto acc = sum<1>(partial);
  if constexpr (HAS_BIAS) acc = acc + load(bias + minimum(rn, N - 1));
  store(out + rn, acc, rn < N);
}

}  // namespace kdsl::kernels
