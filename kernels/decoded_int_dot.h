// decoded_int_dot.h - how Q4_1, Q5_0 and Q5_1 blocks meet Q8_1-style activation blocks in dot4: exact integer sums, the offset through the activations' block sums
#pragma once
#include <cstddef>

#include "kernels/decoded_formats.h"
#include "kernels/matvec_int8_sums.h"

namespace kdsl::kernels {

// The integer-dot policies of the 32-element formats with an offset, for matvec_int8_sums.h.
// The activations come as ggml's Q8_1 does them (quantize_activations_sums<32, 32>): an f32
// scale d_x and the integer sum of the block's 32 quants. The quants q (nibbles, and Q5's
// fifth bit: 0..15 or 0..31, u8) meet the i8 activations in one vpdpbusd each, and the
// offset comes off once per block:
//   Q4_1 / Q5_1: w = d * q + m     x . w = d_x * (d * (q . x) + m * (sum of x))
//   Q5_0:        w = d * (q - 16)  x . w = d_x * (d * (q . x) - 16 * d * (sum of x))
// Elements 0..15 are the low nibbles of qs, 16..31 the high ones; element j's fifth bit is
// bit j of the little-endian 32-bit qh, bit j % 8 of qh byte j / 8 (decoded_formats.h).
// block_dot's arguments are matvec_int8_sums.h's (kquant_int_dot.h describes them); it returns
// BlockSums with the 4 lanes of dot4 over 16 quants.
template <class Format, bool kHasMin, bool kHasHighBit>
struct HalfPartIntDot {
  using Layout = typename Format::Layout;
  static constexpr int kBlockElements = 32, kSumGroup = 32, kBlockBytes = int(sizeof(Layout)), kLanes = 4;

  template <int BR, int BN, class XP, class SP>
  static auto block_dot(Ptr<const u8> wq, const Block<i64, 1, BN, 1> &block, const XP &x, const SP &xs) {
    auto base = block * kBlockBytes;  // [1, BN, 1]
    auto sixteen = wide(reshape<1, 1, 16>(arange<16>()));
    auto qs = load(wq + (base + int(offsetof(Layout, qs)) + sixteen));  // [1, BN, 16]
    auto low = qs & 15, high = qs >> 4;
    if constexpr (kHasHighBit) {
      // Each qh byte broadcast along its 8 lanes ([1, BN, 2, 8]) meets the lane's bit mask.
      auto lane_bit = cast<u8>(full<i32, 1, 1, 1, 8>(1) << reshape<1, 1, 1, 8>(arange<8>()));
      auto pair = wide(reshape<1, 1, 2, 1>(arange<2>()));
      auto base4 = expand_dims<3>(base);
      auto fifth = [&](int at) {  // bit 4 of the 16 values whose bits are qh bytes at, at + 1
        auto bytes = load(wq + (base4 + (int(offsetof(Layout, qh)) + at) + pair));  // [1, BN, 2, 1]
        return reshape<1, BN, 16>(minimum(bytes & lane_bit, 1) << 4);
      };
      low = low | fifth(0);
      high = high | fifth(2);
    }
    auto sums = dot4(low, load(x + sixteen)) + dot4(high, load(x + (sixteen + 16)));  // [BR, BN, 4]
    auto d = block_half_factor<Layout>(wq, block, offsetof(Layout, d));              // [1, BN]
    auto lanes = cast<f32>(sums) * reshape<1, BN, 1>(d);
    auto xsum = reshape<BR, 1>(cast<f32>(load(xs)));  // [BR, 1]
    auto offset = [&] {
      if constexpr (kHasMin) return block_half_factor<Layout>(wq, block, offsetof(Layout, m)) * xsum;
      else return -16.0f * d * xsum;
    }();
    return BlockSums<decltype(lanes), decltype(offset)>{lanes, offset};
  }
};

using Q4_1IntDot = HalfPartIntDot<Q4_1Format, true, false>;
using Q5_0IntDot = HalfPartIntDot<Q5_0Format, false, true>;
using Q5_1IntDot = HalfPartIntDot<Q5_1Format, true, true>;

}  // namespace kdsl::kernels
