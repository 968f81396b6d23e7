// matmul_kquant_int.h - prefill products out[m,n] = x[m,:] . W[n,:] (+ bias[n]) over Q4_K / Q5_K weights as byte dots: tiles of x's 8-bit quants by each sub-block's 4- or 5-bit quants
#pragma once
#include "kernels/kquant_int_dot.h"

namespace kdsl::kernels {

// W is [N][K] in Q4_K or Q5_K (kquant_formats.h; P is its SubBlock32IntDot), K a multiple
// of 256; x arrives quantized by quantize_activations_sums<256, 16> (ggml's Q8_K): quants xq,
// one f32 scale xd per 256 values, the integer sum of every 16 quants xs. One program per BM x BN output tile, one
// super-block of BN weight rows per step. Each sub-block j (32 values) is one byte dot of
// x's [BM, 32] quants by the transposed [BN, 32] tile of its quants (0..15, 0..31 with Q5_K's
// fifth bit), exact in i32; it meets the sub-block's f32 scale d * sc[j] once per output, and
// the minimums dmin * m[j] meet the activations' group sums:
//   x . w = d_x * (sum_j (d * sc[j]) * (q_j . x_j)  -  sum_j (dmin * m[j]) * (sum of x_j))
// as SubBlock32IntDot's decode does (kquant_int_dot.h). The host lowers the byte dot as
// register tiles of vpmaddubsw summed in i16 (src/codegen/host/int_dot_tile.h): a quant
// below 32 against an s8 quant lets 4 (5-bit) or 8 (4-bit) quads share one widening, where
// the f32 tiles (matvec_kquant.h's matmul_kquant) decode W to f32 and spend an FMA on every 8
// products. Rows past M and N are clamped for loading; stores are masked.
//
// Numerics: as matvec_int8_sums.h's; against the f32 path the difference is the activations'
// quantization.
template <class P, int BM, int BN, bool HAS_BIAS>
void matmul_kquant_int(Ptr<const i8> xq, Ptr<const f32> xd, Ptr<const i32> xs, Ptr<const u8> wq, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> M,
                       Scalar<i32> N, Scalar<i32> K) {
  using Layout = typename P::Layout;
  constexpr bool kHighBit = P::kFifthBit;
  constexpr int kBlockBytes = int(sizeof(Layout)), kGroups = formats::kQK_K / 16;
  auto blocks = K / formats::kQK_K;
  auto rm = program_id(0) * BM + arange<BM>();
  auto rn = program_id(1) * BN + arange<BN>();
  auto x_row = col(wide(minimum(rm, M - 1)));                          // [BM, 1]
  auto w_first = wide(minimum(rn, N - 1)) * wide(blocks);             // [BN]: each weight row's first super-block
  auto r32 = row(wide(arange<32>()));                                  // [1, 32]
  auto acc = for_range(0, blocks, 1, zeros<f32, BM, BN>(), [&](auto b, auto acc) {
    auto factors = sub_block_factors<Layout>(wq, row(w_first + wide(b)), wide(zeros<i32, 1, 1>()));  // [1, BN] each
    auto base = col(w_first + wide(b)) * kBlockBytes;                                               // [BN, 1]
    auto x_at = x_row * wide(K) + wide(b * formats::kQK_K);                                         // [BM, 1]
    auto qh = [&] {  // Q5_K: bit j of qh[l] is element l's fifth bit in sub-block j (zeros, unused, for Q4_K)
      if constexpr (kHighBit) return load(wq + (base + int(offsetof(Layout, qh)) + r32));
      else return zeros<u8, BN, 32>();
    }();
    auto scaled = zeros<f32, BM, BN>();
    for (int c = 0; c < 4; ++c) {
      auto qs = load(wq + (base + (int(offsetof(Layout, qs)) + 32 * c) + r32));  // [BN, 32]: sub-blocks 2c and 2c + 1
      for (int h = 0; h < 2; ++h) {
        const int j = 2 * c + h;
        auto q = h == 0 ? (qs & 15) : (qs >> 4);
        if constexpr (kHighBit) q = q | (j <= 4 ? ((qh << (4 - j)) & 16) : ((qh >> (j - 4)) & 16));
        auto x = load(xq + (x_at + 32 * j + r32));  // [BM, 32]
        auto sums = dot(x, trans(cast<i8>(q)));     // [BM, BN], exact
        scaled = scaled + cast<f32>(sums) * factors.scale[size_t(j)];
      }
    }
    auto groups = xs + (x_row * wide(K / 16) + wide(b * kGroups));  // [BM, 1]: this super-block's 16 group sums
    auto minimums = zeros<f32, BM, BN>();
    for (int j = 0; j < 8; ++j) minimums = minimums + cast<f32>(load(groups + 2 * j) + load(groups + (2 * j + 1))) * factors.min[size_t(j)];
    auto d_x = load(xd + (x_row * wide(blocks) + wide(b)));  // [BM, 1]
    return acc + (scaled - minimums) * d_x;
  });
  if constexpr (HAS_BIAS) acc = acc + row(load(bias + minimum(rn, N - 1)));
  store(out + col(wide(rm) * wide(N)) + row(rn), acc, col(rm < M) && row(rn < N));
}

}  // namespace kdsl::kernels
