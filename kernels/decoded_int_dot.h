// decoded_int_dot.h - how Q4_1, Q5_0 and Q5_1 blocks meet Q8_1-style activation blocks in dot4: exact integer sums, the offset through the activations' block sums
#pragma once
#include <cstddef>

#include "kernels/decoded_formats.h"
#include "kernels/matvec_int8_sums.h"

namespace kdsl::kernels {

// The integer-dot policies of Q4_1, Q5_0 and Q5_1, for matvec_int8_sums.h, shaped as their
// HalfPartFormat (decoded_formats.h): Layout, whether there is an offset m, whether there is
// a fifth bit from qh. The activations come as ggml's Q8_1 does them
// (quantize_activations_sums<32, 32>): an f32 scale d_x and the integer sum of the block's 32
// quants. The quants q (u8: the nibbles 0..15, or with the fifth bit 0..31) meet the i8
// activations in one vpdpbusd (or vpmaddubsw) each, and the offset comes off once per block:
//   x . w = d_x * (d * (q . x) + c * (sum of x)),   c = m (Q4_1, Q5_1) or -16 * d (Q5_0)
// Elements 0..15 are the low nibbles of qs, 16..31 the high ones; element i's fifth bit is bit
// i of qh, tested on byte lanes (decoded_formats.h, fifth_bit_bytes). block_dot's arguments are
// matvec_int8_sums.h's (kquant_int_dot.h describes them); it returns BlockSums with the lanes
// of dot4 over a piece of quants: 4 for rows as stored, 1 for rows grouped.
template <class L, bool kHasMin, bool kHasHighBit>
struct HalfPartIntDot {
  static_assert(kHasMin || kHasHighBit, "Q4_0 (no m, no fifth bit) has its own policy, matvec_int8.h's Q4_0IntDot");
  using Layout = L;
  static constexpr int kBlockElements = 32, kSumGroup = 32, kBlockBytes = int(sizeof(Layout));

  // The fifth bits of elements 16h .. 16h + 15 of each weight row's block (`base`: the blocks'
  // first bytes), from qh's bytes 2h and 2h + 1, as bytes 0 or 16, [1, BN, 16].
  template <int BN>
  static Block<u8, 1, BN, 16> fifth_bits_of_half(Ptr<const u8> wq, const Block<i64, BN, 1, 1> &base, int h) {
    auto pair = wide(reshape<1, 2, 1>(arange<2>()));
    return detail::fifth_bit_bytes(load(wq + (base + (int(offsetof(Layout, qh)) + 2 * h) + pair)));  // qh bytes [BN, 2, 1]
  }

  // Rows as stored (StoredBlocks, weight_blocks.h).
  template <int BR, int BN, class XP, class SP>
  static auto block_dot(const StoredBlocks<Layout, Block<i64, 1, BN, 1>> &w, const XP &x, const SP &xs) {
    auto wq = w.wq;
    auto block = w.block;
    auto base = block * kBlockBytes;  // [1, BN, 1]
    auto sixteen = wide(reshape<1, 1, 16>(arange<16>()));
    auto qs = load(wq + (base + int(offsetof(Layout, qs)) + sixteen));  // [1, BN, 16]
    auto quants = [&](const Block<u8, 1, BN, 16> &nibbles, int h) {
      if constexpr (kHasHighBit) return nibbles | fifth_bits_of_half(wq, reshape<BN, 1, 1>(base), h);
      else return nibbles;
    };
    auto low = dot4(quants(qs & 15, 0), load(x + sixteen), zeros<i32, BR, BN, 4>());
    auto sums = dot4(quants(qs >> 4, 1), load(x + (sixteen + 16)), low);  // [BR, BN, 4]
    auto d = block_half_factor<Layout>(wq, block, offsetof(Layout, d));    // [1, BN]
    auto lanes = cast<f32>(sums) * reshape<1, BN, 1>(d);
    auto c = [&] {
      if constexpr (kHasMin) return block_half_factor<Layout>(wq, block, offsetof(Layout, m));
      else return d * -16.0f;
    }();
    auto offset = c * reshape<BR, 1>(cast<f32>(load(xs)));  // [BR, BN]
    return BlockSums<decltype(lanes), decltype(offset)>{lanes, offset};
  }

  // Rows grouped by R (GroupedBlocks, formats/row_groups.h): the quants 4 bytes of each of the
  // R rows at a time (piece i: elements 4i .. 4i + 3 and 16 + 4i ..), each row's sum in one
  // lane. Q5_0's and Q5_1's grouped quants are five-bit bytes (formats::five_bit_bytes_32):
  // the low elements a byte's low 5 bits, a high one its top 3 below bits 2i, 2i + 1 of qh's
  // byte in the same lane, moved to bits 3, 4 by one shift and one mask for the whole piece.
  template <int BR, int R, class XP, class SP>
  static auto block_dot(const GroupedBlocks<Layout, R> &w, const XP &x, const SP &xs) {
    constexpr int P = GroupedBlocks<Layout, R>::kPiece;
    static_assert(P == 4, "the fifth bits below are 4 a piece");
    auto piece = wide(reshape<1, 1, P>(arange<P>()));
    auto one = wide(zeros<i32, 1, 1, 1>());
    // The byte arithmetic runs on the R rows' 4 bytes loaded as rows of 16 (run_of_16: the host
    // lowering's byte lanes, a vector op each), where [R, 4] bytes were loaded and computed
    // byte by byte unless LLVM put them back together (it did for Q5_0, not for Q5_1).
    auto sums = zeros<i32, BR, R, 1>();
    auto fifth_bits = [&] {  // [1, R / 4, 16] (zeros, unused, for Q4_1)
      if constexpr (kHasHighBit) return w.run_of_16(int(offsetof(Layout, qh)));
      else return zeros<u8, 1, R / 4, 16>();
    }();
    static_assert(!kHasHighBit || GroupedBlocks<Layout, R>::kBlockBits == formats::BlockBits::FiveBitBytes, "Q5_0 and Q5_1 are grouped as five-bit bytes");
    for (int i = 0; i < 16; i += P) {
      auto qs = w.run_of_16(int(offsetof(Layout, qs)) + i);
      const int k = i / P;  // the piece
      for (int h = 0; h < 2; ++h) {
        auto q = [&] {
          if constexpr (kHasHighBit) return h == 0 ? (qs & 31) : (qs >> 5) | (k < 2 ? ((fifth_bits << (3 - 2 * k)) & 24) : ((fifth_bits >> (2 * k - 3)) & 24));
          else return h == 0 ? (qs & 15) : (qs >> 4);
        }();
        sums = dot4(reshape<1, R, P>(q), load(x + (piece + (16 * h + i))), sums);  // [BR, R, 1]
      }
    }
    auto d = w.half(offsetof(Layout, d), one);  // [1, R, 1]
    auto lanes = cast<f32>(sums) * d;
    auto c = [&] {
      if constexpr (kHasMin) return w.half(offsetof(Layout, m), one);
      else return d * -16.0f;
    }();
    auto offset = reshape<1, R>(c) * reshape<BR, 1>(cast<f32>(load(xs)));  // [BR, R]
    return BlockSums<decltype(lanes), decltype(offset)>{lanes, offset};
  }

  // Prefill (matmul_int_tiles.h; int_dot_policy.h's takes_prefill_tiles): x's [BM, 32]
  // quants (`x`: each row's first, [BM, 1]; `xs` the block's sum, `xd` its scale) by one block
  // of BN weight rows (`block`: [BN]):
  //   d_x * (d * (x . q) + c * (sum of x)),   c as block_dot's
  // x . q is two byte dots of x's halves by the transposed [BN, 16] quants (0..31), chained:
  // exact in i32 (|x . q| <= 32 * 31 * 127).
  template <int BM, int BN, class XP, class SP, class DP>
  static Block<f32, BM, BN> tile_dot(Ptr<const u8> wq, const Block<i64, BN> &block, const XP &x, const SP &xs, const DP &xd, const Block<f32, BM, BN> &acc) {
    auto base = col(block) * kBlockBytes;  // [BN, 1]
    auto r16 = row(wide(arange<16>()));    // [1, 16]
    auto qs = load(wq + (base + int(offsetof(Layout, qs)) + r16));  // [BN, 16]
    auto quants = [&](auto nibbles, int h) {
      if constexpr (kHasHighBit) return nibbles | reshape<BN, 16>(fifth_bits_of_half(wq, reshape<BN, 1, 1>(base), h));
      else return nibbles;
    };
    auto low = dot(load(x + r16), trans(cast<i8>(quants(qs & 15, 0))));               // [BM, BN]
    auto sums = dot(load(x + (r16 + 16)), trans(cast<i8>(quants(qs >> 4, 1))), low);  // exact
    auto d = block_half_factor<Layout>(wq, block, offsetof(Layout, d));  // [1, BN]
    auto c = [&] {
      if constexpr (kHasMin) return block_half_factor<Layout>(wq, block, offsetof(Layout, m));
      else return d * -16.0f;
    }();
    auto x_scale = load(xd);  // [BM, 1]
    return fma(cast<f32>(sums), d * x_scale, fma(cast<f32>(load(xs)) * x_scale, c, acc));
  }
};

using Q4_1IntDot = HalfPartIntDot<formats::BlockQ4_1, true, false>;
using Q5_0IntDot = HalfPartIntDot<formats::BlockQ5_0, false, true>;
using Q5_1IntDot = HalfPartIntDot<formats::BlockQ5_1, true, true>;

}  // namespace kdsl::kernels
