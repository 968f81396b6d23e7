// matmul_narrow.h - prefill product on a GPU's tensor cores: out[m,n] = x[m,:] . W[n,:] (+ bias[n]) with x rounded to W's f16/bf16
#pragma once
#include "kernels/matmul.h"

namespace kdsl::kernels {

// matmul.h widens each W tile to f32 and multiplies in f32, which a GPU can only do on its FMA
// units. Here each [BM, BK] tile of x is rounded to T (f16 or bf16, the weights' own type) and
// dot multiplies T by T with f32 accumulation: the tensor cores' mma, as llama.cpp's and
// PyTorch's 16-bit GEMMs do. The rounding costs x's low mantissa bits (8 for bf16, 11 for f16
// kept), the accumulation stays f32. W enters dot as trans(W tile), which the NVIDIA lowering
// stages as stored (codegen/gpu/staged_tile.h). The tiling, clamps and ragged step are matmul.h's
// (prefill_tiles).
//
// X = T takes x already rounded (its producer wrote T: Library::product_input_type): the same
// products, from half the bytes, and the x tiles, loaded as stored, are copied ahead of the loop
// as W's are (cp.async on NVIDIA), where f32 tiles are loaded and rounded in registers first.
template <class T, int BM, int BN, int BK, bool HAS_BIAS, class X = f32>
void matmul_narrow(Ptr<const X> x, Ptr<const T> w, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K) {
  static_assert(std::is_same_v<X, f32> || std::is_same_v<X, T>, "matmul_narrow: x is f32 or the weights' own type");
  prefill_tiles<BM, BN, BK, HAS_BIAS>(x, w, bias, out, M, N, K, [](auto a, auto wt, auto /*k_ok*/, auto acc) { return dot(cast<T>(a), trans(wt), acc); });
}

}  // namespace kdsl::kernels
