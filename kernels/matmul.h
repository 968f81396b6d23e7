// matmul.h - batched (prefill) product out[m,n] = x[m,:] . W[n,:] (+ bias[n]) with dot over tiles
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// One program per BM x BN output tile; x is [M][K] f32 and W is [N][K] of T, both K-major, so
// the weight tile is read as its transpose [BK, BN] and widened to f32 for dot. Rows and
// columns past M and N are clamped for loading (stores are masked); the K loop is unmasked
// up to the last whole BK block and the ragged rest is one masked step after it.
template <class T, int BM, int BN, int BK, bool HAS_BIAS>
void matmul(Ptr<f32> x, Ptr<T> w, Ptr<f32> bias, Ptr<f32> out, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K) {
  auto rm = program_id(0) * BM + arange<BM>();
  auto rn = program_id(1) * BN + arange<BN>();
  auto rk = arange<BK>();
  auto x_rows = x + col(wide(minimum(rm, M - 1)) * wide(K));  // [BM, 1]
  auto w_cols = w + row(wide(minimum(rn, N - 1)) * wide(K));  // [1, BN]
  auto k_main = K - K % BK;
  auto acc = for_range(0, k_main, BK, zeros<f32, BM, BN>(), [&](auto k, auto acc) {
    auto a = load(x_rows + row(k + rk));                     // [BM, BK]
    auto b = cast<f32>(load(w_cols + col(k + rk)));          // [BK, BN]
    return dot(a, b, acc);
  });
  acc = if_(
      k_main < K,
      [&] {
        auto kk = k_main + rk;
        auto a = load(x_rows + row(kk), row(kk < K), 0);
        auto b = cast<f32>(load(w_cols + col(kk), col(kk < K), 0));
        return dot(a, b, acc);
      },
      [&] { return acc; });
  if constexpr (HAS_BIAS) acc = acc + row(load(bias + minimum(rn, N - 1)));
  store(out + col(wide(rm) * wide(N)) + row(rn), acc, col(rm < M) && row(rn < N));
}

}  // namespace kdsl::kernels
