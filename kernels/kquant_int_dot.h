// kquant_int_dot.h - how Q4_K, Q5_K and Q6_K super-blocks meet Q8_K-style activation blocks in dot4: exact integer sums per sub-block, scaled in f32 lanes
#pragma once
#include <array>
#include <cstddef>
#include <utility>
#include <vector>

#include "kernels/kquant_formats.h"
#include "kernels/matvec_int8_sums.h"
#include "kernels/weight_blocks.h"

namespace kdsl::kernels {

// The integer-dot policies of the k-quants, for matvec_int8_sums.h. The activations come as
// ggml's Q8_K does them (quantize_activations_sums<256, 16>): one f32 scale d_x per 256 values,
// int8 quants, and the integer sum of every 16 quants. Per (x row, weight row):
//   Q4_K / Q5_K: w = d * sc[j] * q - dmin * m[j]    (sub-block j of 32, q 4 or 5 bits)
//     x . w = d_x * (sum_j (d * sc[j]) * (q_j . x_j)  -  sum_j (dmin * m[j]) * (sum of x_j))
//   Q6_K: w = d * sc[s] * (q - 32)                   (sub-block s of 16, q 6 bits, sc signed)
//     x . w = d_x * (sum_s (d * sc[s]) * (q_s . x_s)  -  32 * sum_s (d * sc[s]) * (sum of x_s))
// The quants are u8 (0..63) against i8 activations: one vpdpbusd each, no 128-offset
// correction; the offsets come off through the activations' group sums. q_j . x_j is dot4's
// [.., 4] i32 lanes, exact (at most 32 * 63 * 127), converted to f32 and multiplied by the
// sub-block's f32 scale d * sc, which is exact (an f16 times a 6- or 8-bit integer), as the
// f32 dequantize path's factors are (kquant_formats.h computes them the same way).
//
// block_dot's arguments: the weights' bytes, each weight row's block [1, BN, 1] (i64, counted
// over the matrix), each x row's 256 quants and 16 group sums ([BR, 1, 1] pointer blocks); it
// returns BlockSums (matvec_int8_sums.h) with 4 lanes.

// The sub-blocks' codes of Q4_K and Q5_K super-blocks: the 6-bit scale and minimum codes
// sc[j] and m[j] for j < 8, as load_scales_mins_k4 (kquant_formats.h) unpacks them from the 12
// packed bytes, and the super-block's d and dmin (f32): blocks shaped like block + spread
// (`block`: each weight row's super-block index, counted over the matrix; `spread`: zeros that
// repeat each row's values along an axis of lanes).
template <class Code, class Factor>
struct SubBlockCodes {
  std::vector<Code> scale, min;
  Factor d, dmin;
};
template <class Layout, class W, class Spread>
auto sub_block_codes(const W &w, const Spread &spread) {
  auto byte = [&](int i) { return w.bytes(int(offsetof(Layout, scales)) + i, spread); };
  std::vector<decltype(byte(0))> s;
  for (int i = 0; i < formats::kKScaleSize; ++i) s.push_back(byte(i));
  SubBlockCodes<decltype(byte(0)), decltype(w.half(offsetof(Layout, d), spread))> codes{
      {}, {}, w.half(offsetof(Layout, d), spread), w.half(offsetof(Layout, dmin), spread)};
  for (int j = 0; j < 8; ++j) {
    codes.scale.push_back(j < 4 ? (s[size_t(j)] & 63) : ((s[size_t(j + 4)] & 15) | ((s[size_t(j - 4)] >> 6) << 4)));
    codes.min.push_back(j < 4 ? (s[size_t(j + 4)] & 63) : ((s[size_t(j + 4)] >> 4) | ((s[size_t(j)] >> 6) << 4)));
  }
  return codes;
}

// The sub-block factors d * sc[j] and dmin * m[j] (f32, exact: an f16 times a 6-bit integer),
// shaped as sub_block_codes's.
template <class Factor>
struct SubBlockFactors {
  std::vector<Factor> scale, min;
};
template <class Layout, class W, class Spread>
auto sub_block_factors(const W &w, const Spread &spread) {
  auto codes = sub_block_codes<Layout>(w, spread);
  SubBlockFactors<decltype(codes.d)> f;
  for (int j = 0; j < 8; ++j) {
    f.scale.push_back(cast<f32>(codes.scale[size_t(j)]) * codes.d);
    f.min.push_back(cast<f32>(codes.min[size_t(j)]) * codes.dmin);
  }
  return f;
}

// Q4_K (kHighBit false) and Q5_K (true): sub-blocks 2c and 2c + 1 are the low and the high
// nibbles of qs[32c .. 32c + 31]; Q5_K's fifth bit of sub-block j is bit j of qh[l]. The
// scales and minimums are load_scales_mins_k4's (kquant_formats.h), one [1, BN, 1] each.
//
// kScalesInI32: decode's other order, for a CPU without VNNI (int_dot_policy.h: the policies'
// `without_vnni`): each sub-block's exact sum is multiplied by its integer scale code in i32
// and the super-block's total meets d once, as Q6_K's does and as llama.cpp's AVX2 kernels do;
// the minimums likewise, by their codes against x's group sums, meeting dmin once. A
// sub-block costs an i32 multiply and add instead of a conversion, an f32 multiply and add and
// its f32 factor's own conversion and multiply, and the block holds 16 codes where it held 16
// f32 factors: on AVX2 (16 vector registers) the f32 order spills, and Q4_K's and Q5_K's
// decode ran at a third of the read stream (bench/RESULTS.md, 2026-12-06, "Q4_K and Q5_K
// decode without VNNI"). With VNNI the f32 order measured faster (the entry of 2026-12-06
// 01:40). Exact: |sum| <= 32 * 31 * 127 a sub-block, times a code <= 63, over 8: < 2^26; the
// minimums' 8 * 63 * 32 * 127 < 2^22. The total rounds once to f32 where the f32 order
// rounded each sub-block's product.
template <class Format, bool kHighBit, bool kScalesInI32 = false>
struct SubBlock32IntDot {
  using Layout = typename Format::Layout;
  static constexpr int kBlockElements = formats::kQK_K, kSumGroup = 16, kBlockBytes = int(sizeof(Layout));
  static constexpr bool kFifthBit = kHighBit;

  // W (weight_blocks.h) gives the quants in pieces of W::kPiece bytes: 16 where the rows are
  // as stored (the host lowering puts four rows' pieces in one 64-byte vpdpbusd, as for Q4_0,
  // matvec_int8.h, and each row keeps dot4's 4 lanes), 4 where they are grouped (one 64-byte
  // load holds 16 rows' pieces, and each row's one lane is its sum).
  template <int BR, int BN, class W, class XP, class SP>
  static auto block_dot(const W &w, const XP &x, const SP &xs) {
    if constexpr (kScalesInI32) return block_dot_i32_codes<BR, BN>(w, x, xs);
    else return block_dot_f32_factors<BR, BN>(w, x, xs);
  }

  // Each sub-block j's exact sum q_j . x_j, [BR, BN, W::kPiece / 4] i32 (its 32 quants in
  // pieces chained through dot4's accumulator), handed to use(j, sums) for j = 0..7 in turn.
  template <int BR, int BN, class W, class XP, class Use>
  static void sub_block_sums(const W &w, const XP &x, Use use) {
    constexpr int P = W::kPiece, L = P / 4, kPieces = 32 / P;
    auto piece = wide(reshape<1, 1, P>(arange<P>()));
    auto pieces = [&](int offset) {  // 32 bytes from `offset`, [1, BN, P] each
      std::vector<decltype(w.bytes(0, piece))> p;
      for (int i = 0; i < kPieces; ++i) p.push_back(w.bytes(offset + i * P, piece));
      return p;
    };
    // Q5_K's qh: byte l holds element l's fifth bit of every sub-block (unused for Q4_K).
    auto qh = [&] {
      if constexpr (kHighBit) return pieces(int(offsetof(Layout, qh)));
      else return std::vector<decltype(w.bytes(0, piece))>{};
    }();
    for (int c = 0; c < 4; ++c) {
      auto qs = pieces(int(offsetof(Layout, qs)) + c * 32);
      for (int h = 0; h < 2; ++h) {
        const int j = 2 * c + h;
        auto sums = zeros<i32, BR, BN, L>();
        for (int i = 0; i < kPieces; ++i) {
          auto q = [&] {
            const auto &b = qs[size_t(i)];
            if constexpr (kHighBit && W::kBlockBits == formats::BlockBits::FiveBitBytes) {
              // Grouped Q5_K (formats::q5_k_five_bit_bytes): an even sub-block's value is the
              // byte's low 5 bits; an odd one's, its top 3 below bits 2c, 2c + 1 of qh moved to 3, 4.
              if (h == 0) return b & 31;
              const auto &e = qh[size_t(i)];
              return (b >> 5) | (c < 2 ? ((e << (3 - 2 * c)) & 24) : ((e >> (2 * c - 3)) & 24));
            } else {
              auto nibble = h == 0 ? (b & 15) : (b >> 4);
              // bit j of qh moved to bit 4 with one constant shift and one mask
              if constexpr (kHighBit) return nibble | (j <= 4 ? ((qh[size_t(i)] << (4 - j)) & 16) : ((qh[size_t(i)] >> (j - 4)) & 16));
              else return nibble;
            }
          }();
          sums = dot4(q, load(x + (piece + (32 * j + i * P))), sums);  // [BR, BN, L]
        }
        use(j, sums);
      }
    }
  }

  // The f32 order: each sub-block's sum converted and multiplied by its f32 factor d * sc.
  template <int BR, int BN, class W, class XP, class SP>
  static auto block_dot_f32_factors(const W &w, const XP &x, const SP &xs) {
    constexpr int L = W::kPiece / 4;
    // Each weight row's scale and minimum of sub-block j as [1, BN, SL]. With several rows of x
    // and 4 lanes a row, SL = 4: every lane holds the row's value, loaded so (a zero-stride
    // run), so that it meets dot4's [.., 4] lanes without moving between vector lanes (the
    // host backend vectorizes along the last axis). With one (decode), SL = 1, broadcast in the
    // multiply: the copies of 28 values for each of BN rows cost a decode step more than they
    // save (bench/RESULTS.md, 2026-12-03, "integer-dot kernels: four rows a vpdpbusd").
    constexpr int SL = BR == 1 ? 1 : L;
    auto [scale, min] = sub_block_factors<Layout>(w, wide(zeros<i32, 1, 1, SL>()));  // [1, BN, SL] each
    auto lanes = zeros<f32, BR, BN, L>();
    auto minimums = zeros<f32, BR, BN, SL>();  // every lane the same: sum_j dmin * m[j] * (sum of x_j)
    sub_block_sums<BR, BN>(w, x, [&](int j, const auto &sums) {
      lanes = lanes + cast<f32>(sums) * scale[size_t(j)];
      auto group = load(xs + 2 * j) + load(xs + (2 * j + 1));  // [BR, 1, 1]: the sub-block's sum of x
      minimums = minimums + min[size_t(j)] * cast<f32>(group);
    });
    auto offset = -sum<2>(minimums) * (1.0f / SL);  // the SL equal lanes' sum / SL: exact
    return BlockSums<decltype(lanes), decltype(offset)>{lanes, offset};
  }

  // The i32 order (kScalesInI32, above): the same sums times their integer codes.
  template <int BR, int BN, class W, class XP, class SP>
  static auto block_dot_i32_codes(const W &w, const XP &x, const SP &xs) {
    auto codes = sub_block_codes<Layout>(w, wide(zeros<i32, 1, 1, 1>()));  // [1, BN, 1] each
    auto scaled = zeros<i32, BR, BN, W::kPiece / 4>();  // sum_j sc[j] * (q_j . x_j)
    auto mins = zeros<i32, BR, BN, 1>();                // sum_j m[j] * (sum of x_j)
    sub_block_sums<BR, BN>(w, x, [&](int j, const auto &sums) {
      scaled = scaled + sums * cast<i32>(codes.scale[size_t(j)]);
      mins = mins + cast<i32>(codes.min[size_t(j)]) * (load(xs + 2 * j) + load(xs + (2 * j + 1)));
    });
    auto lanes = cast<f32>(scaled) * codes.d;
    auto offset = -reshape<BR, BN>(cast<f32>(mins) * codes.dmin);
    return BlockSums<decltype(lanes), decltype(offset)>{lanes, offset};
  }

  // Prefill (matmul_int_tiles.h): x's [BM, 256] quants (`x`: each row's first, [BM, 1]; `xd`
  // its scale) by one super-block of BN weight rows (`block`: [BN], counted over the matrix):
  //   d_x * (d * sum_j sc[j] * (x_j . q_j)  -  sum_j (dmin * m[j]) * (sum of x_j))
  // x_j . q_j is one byte dot of x's [BM, 32] quants by the transposed [BN, 32] tile of
  // sub-block j's quants (0..15, 0..31 with the fifth bit), exact in i32: a quant below 32
  // against an s8 one lets 4 (5-bit) or 8 (4-bit) quads share one widening in the host's
  // vpmaddubsw tiles. Its scale code is an integer, so the sum over sub-blocks is one
  // accumulator of acc + dot * sc, which the host makes one scaled_dot
  // (src/codegen/host/scaled_dot.h): the i16 pair sums widen by sc, in place, and d meets
  // the total once; exact (|x_j . q_j| <= 32 * 31 * 127, times sc <= 63, over 8: < 2^26).
  template <int BM, int BN, class XP, class SP, class DP>
  static Block<f32, BM, BN> tile_dot(Ptr<const u8> wq, const Block<i64, BN> &block, const XP &x, const SP &xs, const DP &xd, const Block<f32, BM, BN> &acc) {
    auto codes = sub_block_codes<Layout>(StoredBlocks<Layout, Block<i64, 1, BN>>{wq, row(block)}, wide(zeros<i32, 1, 1>()));  // [1, BN] each
    auto base = col(block) * kBlockBytes;                                           // [BN, 1]
    auto r32 = row(wide(arange<32>()));                                                 // [1, 32]
    auto qh = [&] {  // Q5_K: bit j of qh[l] is element l's fifth bit in sub-block j (zeros, unused, for Q4_K)
      if constexpr (kHighBit) return load(wq + (base + int(offsetof(Layout, qh)) + r32));
      else return zeros<u8, BN, 32>();
    }();
    auto scaled = zeros<i32, BM, BN>();
    for (int c = 0; c < 4; ++c) {
      auto qs = load(wq + (base + (int(offsetof(Layout, qs)) + 32 * c) + r32));  // [BN, 32]: sub-blocks 2c and 2c + 1
      for (int h = 0; h < 2; ++h) {
        const int j = 2 * c + h;
        auto q = h == 0 ? (qs & 15) : (qs >> 4);
        if constexpr (kHighBit) q = q | (j <= 4 ? ((qh << (4 - j)) & 16) : ((qh >> (j - 4)) & 16));
        scaled = scaled + dot(load(x + (32 * j + r32)), trans(cast<i8>(q))) * cast<i32>(codes.scale[size_t(j)]);  // [BM, BN], exact
      }
    }
    auto minimums = zeros<f32, BM, BN>();
    for (int j = 0; j < 8; ++j)
      minimums = minimums + cast<f32>(load(xs + 2 * j) + load(xs + (2 * j + 1))) * (cast<f32>(codes.min[size_t(j)]) * codes.dmin);
    return fma(cast<f32>(scaled) * codes.d - minimums, load(xd), acc);
  }
};

using Q4_KIntDot = SubBlock32IntDot<Q4_KFormat, false>;
using Q5_KIntDot = SubBlock32IntDot<Q5_KFormat, true>;
using Q4_KIntDotI32Scales = SubBlock32IntDot<Q4_KFormat, false, true>;
using Q5_KIntDotI32Scales = SubBlock32IntDot<Q5_KFormat, true, true>;

// Q6_K: element h * 128 + qq * 32 + l takes nibble qq / 2 of ql[h * 64 + (qq % 2) * 32 + l]
// and bits 2qq, 2qq + 1 of qh[h * 32 + l] (kquant_formats.h). Each sub-block s of 16 values
// (l = 16 * part .. + 15, s = 8h + 2qq + part) is one dot4 row of 16 bytes, so that the host
// lowering puts four weight rows' sub-blocks in one 64-byte vpdpbusd (as for Q4_0,
// matvec_int8.h), and its 4 lanes meet its scale, one per weight row, broadcast. The scales
// multiply in i32, as llama.cpp's do, and the super-block's sums meet d in f32 once: the
// totals stay exact (|sums| <= 16 * 63 * 127 a sub-block, times |scale| <= 128, over 16
// sub-blocks: < 2^28), where scaling every sub-block in f32 cost a conversion and two f32
// operations per 16 values.
struct Q6_KIntDot {
  using Layout = formats::BlockQ6_K;
  static constexpr int kBlockElements = formats::kQK_K, kSumGroup = 16, kBlockBytes = int(sizeof(Layout));

  // The quants in W::kPiece-byte pieces, as SubBlock32IntDot's: each sub-block 16 / kPiece
  // dot4s chained into its L lanes.
  template <int BR, int BN, class W, class XP, class SP>
  static auto block_dot(const W &w, const XP &x, const SP &xs) {
    constexpr int P = W::kPiece, L = P / 4, kPieces = 16 / P;
    auto piece = wide(reshape<1, 1, P>(arange<P>()));
    auto one = wide(zeros<i32, 1, 1, 1>());
    auto d = w.half(offsetof(Layout, d), one);  // [1, BN, 1]
    auto scaled = zeros<i32, BR, BN, L>();
    auto offset = zeros<i32, BR, BN, 1>();  // sum over sub-blocks of scale * (sum of x)
    auto at = [&](int h, int qq, int part, int i) { return load(x + (piece + (128 * h + 32 * qq + 16 * part + i * P))); };
    // Sub-block 8h + 2qq + part's sums meet its scale, and x's sums under it the same scale.
    auto add_scaled = [&](auto sums, int h, int qq, int part) {
      const int sub = 8 * h + 2 * qq + part;
      auto scale = cast<i32>(bitcast<i8>(w.bytes(int(offsetof(Layout, scales)) + sub, one)));  // [1, BN, 1]
      scaled = scaled + sums * scale;
      offset = offset + scale * load(xs + sub);
    };
    if constexpr (W::kBlockBits == formats::BlockBits::SixBitBytes) {
      // Grouped rows (formats::q6_k_six_bit_bytes): the three bytes at (h, l) hold quarters
      // 0, 1 and 2's values in their low 6 bits and quarter 3's in their top bit pairs.
      for (int h = 0; h < 2; ++h)
        for (int part = 0; part < 2; ++part) {
          std::array<Block<i32, BR, BN, L>, 4> sums{zeros<i32, BR, BN, L>(), zeros<i32, BR, BN, L>(), zeros<i32, BR, BN, L>(), zeros<i32, BR, BN, L>()};
          for (int i = 0; i < kPieces; ++i) {
            const int l = 16 * part + i * P;
            auto e0 = w.bytes(int(offsetof(Layout, ql)) + h * 64 + l, piece), e1 = w.bytes(int(offsetof(Layout, ql)) + h * 64 + 32 + l, piece);
            auto e2 = w.bytes(int(offsetof(Layout, qh)) + h * 32 + l, piece);
            sums[0] = dot4(e0 & 63, at(h, 0, part, i), sums[0]);
            sums[1] = dot4(e1 & 63, at(h, 1, part, i), sums[1]);
            sums[2] = dot4(e2 & 63, at(h, 2, part, i), sums[2]);
            sums[3] = dot4((e0 >> 6) | ((e1 >> 4) & 12) | ((e2 >> 2) & 48), at(h, 3, part, i), sums[3]);
          }
          for (int qq = 0; qq < 4; ++qq) add_scaled(sums[size_t(qq)], h, qq, part);
        }
      return finish(scaled, offset, d);
    }
    // Each ql piece loaded once, for both quarters whose nibbles it holds (qq and qq + 2), and
    // each qh piece once a half, for the four quarters whose bits it holds. The i32 sums are
    // exact, so the order changes no value.
    for (int h = 0; h < 2; ++h) {
      std::vector<decltype(w.bytes(0, piece))> qh;  // [1, BN, P] each, bytes h * 32 + 16 * part + i * P
      for (int part = 0; part < 2; ++part)
        for (int i = 0; i < kPieces; ++i) qh.push_back(w.bytes(int(offsetof(Layout, qh)) + h * 32 + 16 * part + i * P, piece));
      for (int a = 0; a < 2; ++a)
        for (int part = 0; part < 2; ++part) {
          auto low_sums = zeros<i32, BR, BN, L>(), high_sums = zeros<i32, BR, BN, L>();  // quarters a and a + 2
          for (int i = 0; i < kPieces; ++i) {
            auto ql = w.bytes(int(offsetof(Layout, ql)) + h * 64 + a * 32 + 16 * part + i * P, piece);
            const auto &hb = qh[size_t(part * kPieces + i)];
            // bits 2qq, 2qq + 1 of qh to bits 4, 5: qq = a (0 or 1) and qq = a + 2
            auto low = (ql & 15) | ((hb << (4 - 2 * a)) & 48);
            auto high = (ql >> 4) | (a == 0 ? (hb & 48) : ((hb >> 2) & 48));
            low_sums = dot4(low, at(h, a, part, i), low_sums);  // [BR, BN, L]
            high_sums = dot4(high, at(h, a + 2, part, i), high_sums);
          }
          add_scaled(low_sums, h, a, part);
          add_scaled(high_sums, h, a + 2, part);
        }
    }
    return finish(scaled, offset, d);
  }

  // The block's scaled sums in f32 lanes, and the -32 of every quant through each sub-block's
  // sum of x: exact in i32 (|offset| < 2^22).
  template <class Scaled, class Offset, class D>
  static auto finish(const Scaled &scaled, const Offset &offset, const D &d) {
    constexpr int BR = Scaled::dims[0], BN = Scaled::dims[1];
    auto lanes = cast<f32>(scaled) * d;
    auto minus_32 = cast<f32>(offset) * (d * -32.0f);
    return BlockSums<decltype(lanes), Block<f32, BR, BN>>{lanes, reshape<BR, BN>(minus_32)};
  }

  // Prefill (matmul_int_tiles.h): x's [BM, 256] quants (`x`: each row's first, [BM, 1]; `xd`
  // its scale) by one super-block of BN weight rows (`block`: [BN], counted over the matrix):
  //   d_x * d * (sum_s sc[s] * (x_s . q_s)  -  32 * sum_s sc[s] * (sum of x_s))
  // x_s . q_s is one byte dot of x's [BM, 16] quants by the transposed [BN, 16] tile of
  // sub-block s's quants (0..63), exact in i32, and meets its scale in i32 as block_dot's do
  // (the same bound: < 2^28): acc + dot * sc, which the host makes one scaled_dot
  // (src/codegen/host/scaled_dot.h), the i16 pair sums widened by sc into one accumulator
  // in place. The offsets' sum over the 16 sub-blocks is one f32 dot of x's
  // group sums [BM, 16] by the transposed scales [BN, 16]: exact (each product below 2^18,
  // the sum below 2^22), where 16 outer products of a [BM, 1] by a [1, BN] cost a multiply
  // and an add per output each.
  template <int BM, int BN, class XP, class SP, class DP>
  static Block<f32, BM, BN> tile_dot(Ptr<const u8> wq, const Block<i64, BN> &block, const XP &x, const SP &xs, const DP &xd, const Block<f32, BM, BN> &acc) {
    auto base = col(block) * kBlockBytes;  // [BN, 1]
    auto r16 = row(wide(arange<16>()));     // [1, 16]
    auto scaled = zeros<i32, BM, BN>();
    for (int h = 0; h < 2; ++h)
      for (int part = 0; part < 2; ++part) {
        auto qh = load(wq + (base + (int(offsetof(Layout, qh)) + h * 32 + 16 * part) + r16));  // [BN, 16]
        for (int qq = 0; qq < 4; ++qq) {
          const int sub = 8 * h + 2 * qq + part;
          auto ql = load(wq + (base + (int(offsetof(Layout, ql)) + h * 64 + (qq % 2) * 32 + 16 * part) + r16));
          auto low = qq < 2 ? (ql & 15) : (ql >> 4);
          auto high = qq < 2 ? ((qh << (4 - 2 * qq)) & 48) : qq == 2 ? (qh & 48) : ((qh >> 2) & 48);  // bits 2qq, 2qq + 1 to bits 4, 5
          auto scale = cast<i32>(bitcast<i8>(load(wq + (row(block) * kBlockBytes + (int(offsetof(Layout, scales)) + sub)))));  // [1, BN]
          scaled = scaled + dot(load(x + (128 * h + 32 * qq + 16 * part + r16)), trans(cast<i8>(low | high))) * scale;  // [BM, BN], exact
        }
      }
    auto scales = cast<f32>(bitcast<i8>(load(wq + (base + int(offsetof(Layout, scales)) + r16))));  // [BN, 16]
    auto offsets = dot(cast<f32>(load(xs + r16)), trans(scales));                              // [BM, BN]
    auto d = block_half_factor<Layout>(wq, block, offsetof(Layout, d));  // [1, BN]
    return fma(cast<f32>(scaled) - offsets * 32.0f, d * load(xd), acc);
  }
};

}  // namespace kdsl::kernels
