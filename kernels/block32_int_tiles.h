// block32_int_tiles.h - prefill tiles of Q4_0, Q8_0 and IQ4_NL weights as byte dots: x's 8-bit quants of a 32-value block by the block's quants of BN weight rows
#pragma once
#include <cstddef>

#include "kernels/matvec_int8_sums.h"
#include "kernels/quant_formats.h"
#include "kernels/quantize_activations.h"

namespace kdsl::kernels {

// The tiles policy (int_dot_policy.h's `tiles`, matmul_int_tiles.h) of Q4_0: x arrives
// quantized as Q8_1 (quantize_activations_sums<32, 32>: int8 quants, a scale d_x and the
// quants' sum each block), and one block's contribution to the [BM, BN] tile is
//   d_x * d * (x . q  -  8 * (sum of x))
// with q the nibbles (0..15: elements 0..15 the low ones, 16..31 the high ones). x . q is two
// byte dots of x's [BM, 16] halves by the transposed [BN, 16] nibbles, chained into one
// accumulator (exact in i32: |x . q| <= 32 * 15 * 127), the host's register tiles of
// vpdpbusd, or without VNNI of vpmaddubsw summed in i16 (src/codegen/host/int_dot_tile.h).
struct Q4_0Tiles {
  using Layout = formats::BlockQ4_0;
  static constexpr int kBlockElements = 32, kSumGroup = 32, kBlockBytes = int(sizeof(Layout));

  template <int BM, int BN, class XP, class SP, class DP>
  static Block<f32, BM, BN> tile_dot(Ptr<const u8> wq, const Block<i64, BN> &block, const XP &x, const SP &xs, const DP &xd, const Block<f32, BM, BN> &acc) {
    auto r16 = row(wide(arange<16>()));                                                     // [1, 16]
    auto qs = load(wq + (col(block) * kBlockBytes + int(offsetof(Layout, qs)) + r16));       // [BN, 16]
    auto low = dot(load(x + r16), trans(cast<i8>(qs & 15)));                                // [BM, BN]
    auto sums = dot(load(x + (r16 + 16)), trans(cast<i8>(qs >> 4)), low);                  // exact
    auto d = block_half_factor<Layout>(wq, block, offsetof(Layout, d));  // [1, BN]
    return fma(cast<f32>(sums) - cast<f32>(load(xs)) * 8.0f, d * load(xd), acc);
  }
};

// x's quants of a 32-value block, [BM, W] from column `first`, within +-127 as the quantizer
// writes them (a vpmaxsb a tile row; see quants_within_127).
template <int W, class XP>
auto activations_within_127(const XP &x, int first) {
  return quants_within_127(load(x + (row(wide(arange<W>())) + first)));  // [BM, W]
}

// Q8_0's: one block's contribution is d_x * d * (x . q), q the block's int8 quants: one byte
// dot of x's [BM, 32] by the transposed [BN, 32] quants. Both are s8, which vpdpbusd does not
// take as they are: the host's tiles add 128 to the weights' bytes (u8) and take 128 times
// x's sum off after (src/codegen/host/int_dot_tile.h, flip_b); without VNNI, x's sign moves
// onto the weights, as in IQ4_NL's. x's block sums are made (kSumGroup 32, as
// matmul_int_tiles.h reads a sum group) but not read.
struct Q8_0Tiles {
  using Layout = formats::BlockQ8_0;
  static constexpr int kBlockElements = 32, kSumGroup = 32, kBlockBytes = int(sizeof(Layout));

  template <int BM, int BN, class XP, class SP, class DP>
  static Block<f32, BM, BN> tile_dot(Ptr<const u8> wq, const Block<i64, BN> &block, const XP &x, const SP &, const DP &xd, const Block<f32, BM, BN> &acc) {
    auto r32 = row(wide(arange<32>()));                                                                    // [1, 32]
    auto q = load(reinterpret<i8>(wq) + (col(block) * kBlockBytes + int(offsetof(Layout, qs)) + r32));       // [BN, 32]
    auto sums = dot(activations_within_127<32>(x, 0), trans(q));                                          // [BM, BN], exact
    auto d = block_half_factor<Layout>(wq, block, offsetof(Layout, d));  // [1, BN]
    return fma(cast<f32>(sums), d * load(xd), acc);
  }
};

// IQ4_NL's: Q4_0's nibbles, each become its grid level (int8, -127..113) by a gather from the
// grid's row (one vpshufb for 16 on the host, lower_host.cpp's lookup_bytes_in_table); the
// levels against x are s8 x s8, as Q8_0's are. d_x * d * (x . levels).
struct IQ4_NLTiles {
  using Layout = formats::BlockIQ4_NL;
  static constexpr int kBlockElements = 32, kSumGroup = 32, kBlockBytes = int(sizeof(Layout));

  template <int BM, int BN, class XP, class SP, class DP>
  static Block<f32, BM, BN> tile_dot(Ptr<const u8> wq, const Block<i64, BN> &block, const XP &x, const SP &, const DP &xd, const Block<f32, BM, BN> &acc) {
    auto r16 = row(wide(arange<16>()));                                                      // [1, 16]
    auto qs = load(wq + (col(block) * kBlockBytes + int(offsetof(Layout, qs)) + r16));        // [BN, 16]
    auto grid = broadcast_to<BN, 16>(IQ4_NLFormat::levels<i8>(cast<u8>(row(arange<16>()))));  // the 16 levels, each row
    auto low = dot(activations_within_127<16>(x, 0), trans(gather(grid, qs & 15, 1)));      // [BM, BN]
    auto sums = dot(activations_within_127<16>(x, 16), trans(gather(grid, qs >> 4, 1)), low);  // exact
    auto d = block_half_factor<Layout>(wq, block, offsetof(Layout, d));  // [1, BN]
    return fma(cast<f32>(sums), d * load(xd), acc);
  }
};

}  // namespace kdsl::kernels
