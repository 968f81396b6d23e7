// matvec_rows.h - a few rows at once (small batches, speculative-decoding checks): out[r,n] = x[r,:] . W[n,:] (+ bias[n])
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// Like matvec, memory-bound on W, but for up to BR rows of x: each step loads a [BN, BK]
// weight tile once and uses it for every row, so W is streamed once for all of them rather
// than once per row (dot tiles would pad the rows to a full tile). Each step reduces its
// [BR, BN, BK] products over BK straight into the [BR, BN] accumulator. Rows of x past
// `rows` and rows of W past N are clamped for loading; stores are masked. The BN rows of W
// are spread as in matvec.h, and PREFETCH is as there.
// x's elements are X: f32, or the weights' f16 / bf16 where x's producer wrote those
// (Library::product_input_type), widened to f32 as they are loaded.
template <class T, int BR, int BN, int BK, bool HAS_BIAS, int PREFETCH = 0, class X = f32>
void matvec_rows(Ptr<const X> x, Ptr<const T> w, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> rows, Scalar<i32> N, Scalar<i32> K) {
  auto r = arange<BR>();
  auto rn = spread_rows<BN>(N);
  auto rk = arange<BK>();
  auto x_rows = x + col(wide(minimum(r, rows - 1)) * wide(K));  // [BR, 1]
  auto w_rows = w + col(wide(minimum(rn, N - 1)) * wide(K));    // [BN, 1]
  auto step = [&](auto acc, auto kk, bool masked) {
    if (PREFETCH > 0 && !masked) prefetch(w_rows + row(kk) + PREFETCH);
    auto k_ok = row(kk < K);
    auto xs = cast<f32>(masked ? load(x_rows + row(kk), k_ok, 0) : load(x_rows + row(kk)));  // [BR, BK]
    auto ws = cast<f32>(masked ? load(w_rows + row(kk), k_ok, 0) : load(w_rows + row(kk)));  // [BN, BK]
    return acc + sum<2>(expand_dims<1>(xs) * expand_dims<0>(ws));
  };
  auto k_main = K - K % BK;
  auto acc = for_range(0, k_main, BK, zeros<f32, BR, BN>(), [&](auto k, auto acc) { return step(acc, k + rk, false); });
  acc = if_(
      k_main < K, [&] { return step(acc, k_main + rk, true); }, [&] { return acc; });
  store_product<HAS_BIAS>(out, bias, acc, r, rn, rows, N);
}

}  // namespace kdsl::kernels
