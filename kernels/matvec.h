// matvec.h - decode matrix-vector product out[n] = W[n,:] . x (+ bias[n]) over f32, f16 or bf16 weights
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// One program per BN output rows. The loop over K reads BN weight rows contiguously, BK
// columns at a time, and reduces each [BN, BK] tile of products into the [BN] f32 accumulator
// in the same pass: the product tile never exists in memory (the host backend runs the
// reduction inside the loop that loads, widens and multiplies), so what costs is the weights'
// load and widening alone (the kernel is memory-bound). Rows past N are clamped (their loads
// stay in bounds, their stores are masked), so the main loop carries no masks; the columns past
// the last whole BK block are one masked step after it.
//
// PREFETCH > 0 asks for the weights PREFETCH elements past each step's tile while the tile is
// summed. The BN rows are interleaved streams, each short (a row is K elements), and with f16
// the loop spends more instructions per byte than the hardware prefetcher's lead covers: on the
// 2-core development VM (Sapphire Rapids) 8 KiB ahead took f16 decode products from about 13 to
// 18-20 GB/s and f32 from about 17 to 20-25 (kdsl-bench-engine). Past the last row the hint
// reads nothing (a prefetch never faults).
template <class T, int BN, int BK, bool HAS_BIAS, int PREFETCH = 0>
void matvec(Ptr<f32> x, Ptr<T> w, Ptr<f32> bias, Ptr<f32> out, Scalar<i32> N, Scalar<i32> K) {
  auto rn = program_id(0) * BN + arange<BN>();
  auto rows = w + col(wide(minimum(rn, N - 1)) * wide(K));  // [BN, 1] row starts
  auto rk = arange<BK>();
  auto k_main = K - K % BK;
  auto acc = for_range(0, k_main, BK, zeros<f32, BN>(), [&](auto k, auto acc) {
    auto kk = row(k + rk);
    if constexpr (PREFETCH > 0) prefetch(rows + kk + PREFETCH);
    return acc + sum<1>(cast<f32>(load(rows + kk)) * load(x + kk));
  });
  acc = if_(
      k_main < K,
      [&] {
        auto kk = row(k_main + rk);
        return acc + sum<1>(cast<f32>(load(rows + kk, kk < K, 0)) * load(x + kk, kk < K, 0));
      },
      [&] { return acc; });
  if constexpr (HAS_BIAS) acc = acc + load(bias + minimum(rn, N - 1));
  store(out + rn, acc, rn < N);
}

}  // namespace kdsl::kernels
