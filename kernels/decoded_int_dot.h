// decoded_int_dot.h - how Q4_1 blocks meet Q8_1-style activation blocks in dot4: exact integer sums, the offset through the activations' block sums
#pragma once
#include <cstddef>

#include "kernels/decoded_formats.h"
#include "kernels/matvec_int8_sums.h"

namespace kdsl::kernels {

// The integer-dot policy of Q4_1, for matvec_int8_sums.h. The activations come as ggml's Q8_1
// does them (quantize_activations_sums<32, 32>): an f32 scale d_x and the integer sum of the
// block's 32 quants. The nibbles q (u8, 0..15) meet the i8 activations in one vpdpbusd each,
// and the offset m comes off once per block:
//   w = d * q + m     x . w = d_x * (d * (q . x) + m * (sum of x))
// Elements 0..15 are the low nibbles of qs, 16..31 the high ones. block_dot's arguments are
// matvec_int8_sums.h's (kquant_int_dot.h describes them); it returns BlockSums with the 4
// lanes of dot4 over 16 quants.
struct Q4_1IntDot {
  using Layout = formats::BlockQ4_1;
  static constexpr int kBlockElements = 32, kSumGroup = 32, kBlockBytes = int(sizeof(Layout)), kLanes = 4;

  template <int BR, int BN, class XP, class SP>
  static auto block_dot(Ptr<const u8> wq, const Block<i64, 1, BN, 1> &block, const XP &x, const SP &xs) {
    auto base = block * kBlockBytes;  // [1, BN, 1]
    auto sixteen = wide(reshape<1, 1, 16>(arange<16>()));
    auto qs = load(wq + (base + int(offsetof(Layout, qs)) + sixteen));                       // [1, BN, 16]
    auto low = dot4(qs & 15, load(x + sixteen), zeros<i32, BR, BN, 4>());
    auto sums = dot4(qs >> 4, load(x + (sixteen + 16)), low);  // [BR, BN, 4]
    auto lanes = cast<f32>(sums) * reshape<1, BN, 1>(block_half_factor<Layout>(wq, block, offsetof(Layout, d)));
    auto offset = block_half_factor<Layout>(wq, block, offsetof(Layout, m)) * reshape<BR, 1>(cast<f32>(load(xs)));  // [BR, BN]
    return BlockSums<decltype(lanes), decltype(offset)>{lanes, offset};
  }
};

// Q5_0 (w = d * (q - 16)) and Q5_1 (w = d * q + m), q 5 bits: its low 4 bits Q4_1's nibbles,
// its fifth bit bit i of qh (32 bits, little-endian) for element i, spread to the lanes on i32
// lanes as the f32 path does (decoded_formats.h: a shift by each lane's own amount), then
// narrowed to bytes. The q (u8, 0..31) meet the i8 activations in one vpdpbusd (or
// vpmaddubsw) each, and the -16 or m comes off once per block through the activations' block
// sum:
//   x . w = d_x * (d * (q . x) + c * (sum of x)),   c = -16 * d (Q5_0) or m (Q5_1)
template <class L, bool kHasMin>
struct Q5IntDot {
  using Layout = L;
  static constexpr int kBlockElements = 32, kSumGroup = 32, kBlockBytes = int(sizeof(Layout)), kLanes = 4;

  template <int BR, int BN, class XP, class SP>
  static auto block_dot(Ptr<const u8> wq, const Block<i64, 1, BN, 1> &block, const XP &x, const SP &xs) {
    auto base = block * kBlockBytes;  // [1, BN, 1]
    auto sixteen = wide(reshape<1, 1, 16>(arange<16>()));
    auto qs = load(wq + (base + int(offsetof(Layout, qs)) + sixteen));  // [1, BN, 16]
    auto rows = reshape<BN, 1, 1>(base);
    auto pair = wide(reshape<1, 2, 1>(arange<2>()));
    auto fifth = [&](int h) {  // 16 where element 16h + l has its fifth bit
      auto qh = load(wq + (rows + (int(offsetof(Layout, qh)) + 2 * h) + pair));  // [BN, 2, 1]: qh bytes 2h, 2h + 1
      return reshape<1, BN, 16>(cast<u8>(detail::fifth_bits(qh)));
    };
    auto x0 = load(x + sixteen), x1 = load(x + (sixteen + 16));
    auto sums = dot4((qs >> 4) | fifth(1), x1, dot4((qs & 15) | fifth(0), x0, zeros<i32, BR, BN, 4>()));  // [BR, BN, 4]
    auto d = block_half_factor<Layout>(wq, block, offsetof(Layout, d));  // [1, BN]
    auto lanes = cast<f32>(sums) * reshape<1, BN, 1>(d);
    auto c = [&] {
      if constexpr (kHasMin) return block_half_factor<Layout>(wq, block, offsetof(Layout, m));
      else return d * -16.0f;
    }();
    auto offset = c * reshape<BR, 1>(cast<f32>(load(xs)));  // [BR, BN]
    return BlockSums<decltype(lanes), decltype(offset)>{lanes, offset};
  }
};

using Q5_0IntDot = Q5IntDot<formats::BlockQ5_0, false>;
using Q5_1IntDot = Q5IntDot<formats::BlockQ5_1, true>;

}  // namespace kdsl::kernels
