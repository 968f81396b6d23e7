// matmul_narrow.h - prefill product on a GPU's tensor cores: out[m,n] = x[m,:] . W[n,:] (+ bias[n]) with x rounded to W's f16/bf16
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// matmul.h widens each W tile to f32 and multiplies in f32, which a GPU can only do on its FMA
// units. Here each [BM, BK] tile of x is rounded to T (f16 or bf16, the weights' own type) and
// dot multiplies T by T with f32 accumulation: the tensor cores' mma, as llama.cpp's and
// PyTorch's 16-bit GEMMs do. The rounding costs x's low mantissa bits (8 for bf16, 11 for f16
// kept), the accumulation stays f32. Rows past M and columns past N are clamped for loading
// (stores are masked); the ragged end of K is one masked step.
template <class T, int BM, int BN, int BK, bool HAS_BIAS>
void matmul_narrow(Ptr<const f32> x, Ptr<const T> w, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K) {
  auto rm = program_id(0) * BM + arange<BM>();
  auto rn = program_id(1) * BN + arange<BN>();
  auto rk = arange<BK>();
  auto x_rows = x + col(wide(minimum(rm, M - 1)) * wide(K));  // [BM, 1]
  auto w_rows = w + col(wide(minimum(rn, N - 1)) * wide(K));  // [BN, 1]
  auto step = [&](auto acc, auto kk, bool masked) {
    auto k_ok = row(kk < K);  // [1, BK]
    auto a = cast<T>(masked ? load(x_rows + row(kk), k_ok, 0) : load(x_rows + row(kk)));  // [BM, BK]
    auto wt = masked ? load(w_rows + row(kk), k_ok, 0) : load(w_rows + row(kk));         // [BN, BK]
    return dot(a, trans(wt), acc);
  };
  auto k_main = K - K % BK;
  auto acc = for_range(0, k_main, BK, zeros<f32, BM, BN>(), [&](auto k, auto acc) { return step(acc, k + rk, false); });
  acc = if_(
      k_main < K, [&] { return step(acc, k_main + rk, true); }, [&] { return acc; });
  if constexpr (HAS_BIAS) acc = acc + row(load(bias + minimum(rn, N - 1)));
  store(out + col(wide(rm) * wide(N)) + row(rn), acc, col(rm < M) && row(rn < N));
}

}  // namespace kdsl::kernels
