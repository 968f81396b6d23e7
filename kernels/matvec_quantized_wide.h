// matvec_quantized_wide.h - decode for GPUs over Q8_0 / Q4_0 / IQ4_NL / F8_E4M3 weights read in place, partial sums kept across K
#pragma once
#include "kernels/matvec_wide.h"
#include "kernels/quant_formats.h"

namespace kdsl::kernels {

// matvec_quantized.h steps one 32-value block of each row at a time: on a GPU that is a few
// hundred bytes a step for a whole block of threads, latency after latency (bench/RESULTS.md,
// 2026-12-04, the quantized decode rows). As matvec_wide.h does for 16-bit weights, a program here takes BN neighbouring
// rows BB blocks at a time ([BN, BB, kPartBytes] quant bytes and [BN, BB] scales, BB * 32
// values of each row) and keeps every thread's share of the products in f32 registers across
// K, reduced once after the loop: the loop is loads, decoding and FMAs. W is [N][K] in format F
// (quant_formats.h), K a multiple of 32; rows past N are clamped and their stores masked; a last
// step of fewer than BB blocks is masked. The quants are decoded without integer-to-float
// conversions where the format can (part_without_conversion, quant_formats.h).
// NORMED, ADD and SWIGLU fuse the norm before the product, the residual add after it, and the
// feed-forward's gate, up and SwiGLU (W of 2N rows), as matvec_wide_fused (matvec_wide.h) does.
template <class F, int BN, int BB, bool HAS_BIAS, bool NORMED, bool ADD, bool SWIGLU = false>
void matvec_quantized_wide_fused(Ptr<const f32> x, Ptr<const f32> norm_w, Ptr<const typename F::Quant> wq, Ptr<const f32> bias, Ptr<f32> out,
                                 Scalar<i32> N, Scalar<i32> K, Scalar<f32> eps) {
  constexpr int PB = F::kPartBytes;
  auto blocks = K / F::kBlockElements;  // per row
  auto rn = program_id(0) * BN + arange<BN>();
  auto row_block = col(wide(minimum(rn, N - 1)) * wide(blocks));  // [BN, 1] each row's first block
  auto up_block = row_block + wide(N) * wide(blocks);               // SWIGLU: the up product's rows
  auto rb = arange<BB>();
  auto rj = reshape<1, 1, PB>(arange<PB>());
  auto step = [&](auto b0, auto partial, auto partial_up, auto squares, bool masked) {
    auto blk = b0 + rb;               // [BB]
    auto in_row = row(blk < blocks);  // [1, BB]
    auto in_row3 = expand_dims<2>(in_row);
    auto g = load_block_group<F>(wq, row_block + row(wide(blk)), in_row, masked);  // [BN, BB, PB], [BN, BB, 1]
    auto u = g;                                                   // SWIGLU: the up rows' blocks, loaded once
    auto at = expand_dims<2>(row(blk * F::kBlockElements)) + rj;  // [1, BB, PB]
    for (int p = 0; p < F::kParts; ++p) {
      auto xs = masked ? load(x + (at + p * PB), in_row3, 0) : load(x + (at + p * PB));
      if constexpr (NORMED) {
        squares = squares + xs * xs;
        xs = xs * (masked ? load(norm_w + (at + p * PB), in_row3, 0) : load(norm_w + (at + p * PB)));
      }
      partial = partial + part_without_conversion<F>(g.quants, p) * (xs * g.scales);
      if constexpr (SWIGLU) {
        // Loaded at the first part, after the gate's products: so ordered, ptxas gives the Q8_0
        // kernel fewer registers than with the load ahead of the loop (kdsl-compile --target sm_90).
        if (p == 0) u = load_block_group<F>(wq, up_block + row(wide(blk)), in_row, masked);
        partial_up = partial_up + part_without_conversion<F>(u.quants, p) * (xs * u.scales);
      }
    }
    return std::tuple(partial, partial_up, squares);
  };
  auto b_main = blocks - blocks % BB;
  auto sums = for_range(0, b_main, BB, zeros<f32, BN, BB, PB>(), zeros<f32, SWIGLU ? BN : 1, SWIGLU ? BB : 1, SWIGLU ? PB : 1>(),
                        zeros<f32, 1, NORMED ? BB : 1, NORMED ? PB : 1>(),
                        [&](auto b, auto partial, auto partial_up, auto squares) { return step(b, partial, partial_up, squares, false); });
  sums = if_(
      b_main < blocks, [&] { return step(b_main, std::get<0>(sums), std::get<1>(sums), std::get<2>(sums), true); }, [&] { return sums; });
  auto [partial, partial_up, squares] = sums;
  finish_fused_decode<HAS_BIAS, NORMED, ADD, SWIGLU>(sum<1>(sum<2>(partial)), sum<1>(sum<2>(partial_up)), squares, bias, out, rn, N, K, eps);
}

// The plain product: out[n] = W[n,:] . x (+ bias[n]).
template <class F, int BN, int BB, bool HAS_BIAS>
void matvec_quantized_wide(Ptr<const f32> x, Ptr<const typename F::Quant> wq, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> N, Scalar<i32> K) {
  matvec_quantized_wide_fused<F, BN, BB, HAS_BIAS, false, false>(x, x, wq, bias, out, N, K, full<f32>(0.0f));  // no norm: x stands for its weights
}

}  // namespace kdsl::kernels
