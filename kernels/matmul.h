// matmul.h - batched (prefill) product out[m,n] = x[m,:] . W[n,:] (+ bias[n]) with dot over tiles
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// One program per BM x BN output tile; x is [M][K] of X (f32; on a GPU also W's f16 / bf16)
// and W is [N][K] of T, both K-major.
// Each step loads a [BM, BK] tile of x and a [BN, BK] tile of W, both contiguous along K, and
// `product(a, wt, k_ok, acc)` adds their product to the [BM, BN] f32 accumulator (k_ok: the
// step's columns inside K, [1, BK]). Rows past M and columns past N are clamped for loading
// (stores are masked); the K loop runs unmasked up to the last whole BK block and the ragged
// rest is one masked step after it. matmul (below) and matmul_narrow.h differ in the product.
template <int BM, int BN, int BK, bool HAS_BIAS, class X, class T, class Product>
void prefill_tiles(Ptr<const X> x, Ptr<const T> w, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K,
                   Product product) {
  auto rm = program_id(0) * BM + arange<BM>();
  auto rn = program_id(1) * BN + arange<BN>();
  auto rk = arange<BK>();
  auto x_rows = x + col(wide(minimum(rm, M - 1)) * wide(K));  // [BM, 1]
  auto w_rows = w + col(wide(minimum(rn, N - 1)) * wide(K));  // [BN, 1]
  auto step = [&](auto acc, auto kk, bool masked) {
    auto k_ok = row(kk < K);  // [1, BK]
    auto a = masked ? load(x_rows + row(kk), k_ok, 0) : load(x_rows + row(kk));   // [BM, BK]
    auto wt = masked ? load(w_rows + row(kk), k_ok, 0) : load(w_rows + row(kk));  // [BN, BK]
    return product(a, wt, k_ok, acc);
  };
  auto k_main = K - K % BK;
  auto acc = for_range(0, k_main, BK, zeros<f32, BM, BN>(), [&](auto k, auto acc) { return step(acc, k + rk, false); });
  acc = if_(
      k_main < K, [&] { return step(acc, k_main + rk, true); }, [&] { return acc; });
  if constexpr (HAS_BIAS) acc = acc + row(load(bias + minimum(rn, N - 1)));
  store(out + col(wide(rm) * wide(N)) + row(rn), acc, col(rm < M) && row(rn < N));
}

// The product in f32: dot takes the W tile transposed, widened to f32. The `where` (true for
// every column of a whole step) makes that transposed tile a block of its own, written once
// per step, rather than a strided view dot would re-read in its inner loop.
template <class T, int BM, int BN, int BK, bool HAS_BIAS>
void matmul(Ptr<const f32> x, Ptr<const T> w, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K) {
  prefill_tiles<BM, BN, BK, HAS_BIAS>(x, w, bias, out, M, N, K, [](auto a, auto wt, auto k_ok, auto acc) {
    auto b = where(trans(k_ok), trans(cast<f32>(wt)), 0.0f);  // [BK, BN]
    return dot(a, b, acc);
  });
}

}  // namespace kdsl::kernels
