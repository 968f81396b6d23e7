// matvec.h - decode matrix-vector product out[n] = W[n,:] . x (+ bias[n]) over f32, f16 or bf16 weights
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// One program per BN output rows, spread N/BN apart (spread_rows in common.h says why). The loop
// over K reads the BN weight rows BK columns at a time and reduces each [BN, BK] tile of
// products into the [BN] f32 accumulator in the same pass: the product tile never exists in
// memory (the host backend runs the reduction inside the loop that loads, widens and
// multiplies), so what costs is the weights' load and widening alone (the kernel is
// memory-bound). Rows past N are clamped (their loads stay in bounds, their stores are
// masked), so the main loop carries no masks; the columns past the last whole BK block are one
// masked step after it.
//
// PREFETCH > 0 asks for the weights PREFETCH elements past each step's tile while the tile is
// summed (a prefetch never faults, past the last row it reads nothing). With f16 and bf16 the
// loop spends more instructions per byte than f32, and the demand loads waiting on memory fill
// the scheduler before enough lines are in flight. With spread rows one step ahead
// (PREFETCH = BK) was best on the 2-core development VM: timing the kernel alone, interleaved
// with the alternatives, f16 [32000 x 768] products read 21 GB/s with no prefetch, 24 one step
// ahead and 21-23 two to eight steps ahead (f32: 24, 25, 23-24).
template <class T, int BN, int BK, bool HAS_BIAS, int PREFETCH = 0>
void matvec(Ptr<const f32> x, Ptr<const T> w, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> N, Scalar<i32> K) {
  auto rn = spread_rows<BN>(N);
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
