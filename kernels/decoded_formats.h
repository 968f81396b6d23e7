// decoded_formats.h - how kdsl kernels read ggml's Q4_1, Q5_0 and Q5_1 blocks in place: loaded whole, decoded in 16-element parts
#pragma once
#include <cstddef>
#include <vector>

#include <kdsl/formats/quant_blocks.h>

#include "kernels/common.h"

namespace kdsl::kernels {

// These 32-element formats follow the k-quants' protocol (kquant_formats.h: load_block<R>, then
// part(loaded, p) as finished f32 values), not quant_formats.h's "parts times one scale": Q4_1
// and Q5_1 add an offset m per block, and the Q5 formats take a fifth bit per value from qh.
// A block's two parts are its 16 low nibbles (elements 0..15) and its 16 high nibbles
// (16..31) of qs; element j of part p takes bit 16p + j of qh, the little-endian 32-bit word,
// that is bit j % 8 of qh byte 2p + j / 8. So a part is shaped [R, 2, 8] while decoding: the
// two qh bytes of the part broadcast along the 8 lanes and meet a per-lane shift 0..7 (on i32
// lanes, which AVX2 shifts lane by lane), and the 16 qs bytes load as one contiguous run.
// Each value is computed with the reference dequantizer's operations in its order (the
// integer decoding is exact, then q * d (+ m) rounds once or twice, as it does there).

namespace detail {

// The [1, 2, 8] lanes of a 16-element part, and each lane's bit within its qh byte.
inline Block<i32, 1, 2, 8> half_block_lanes() { return reshape<1, 2, 8>(arange<16>()); }
inline Block<i32, 1, 1, 8> qh_bit_of_lane() { return reshape<1, 1, 8>(arange<8>()); }

// The low (p == 0) or high (p == 1) nibbles of qs.
template <int R>
Block<i32, R, 2, 8> nibbles(const Block<u8, R, 2, 8> &qs, int p) {
  return cast<i32>(p == 0 ? (qs & 15) : (qs >> 4));
}

// Bit 4 of each value of part p: bit 16p + j of the block's 32-bit qh, as 0 or 16.
template <int R>
Block<i32, R, 2, 8> fifth_bits(const Block<u8, R, 2, 1> &qh_bytes) {
  return ((cast<i32>(qh_bytes) >> qh_bit_of_lane()) & 1) << 4;
}

// The same bits as bytes, each half's 16 lanes in a row [1, R, 16], for the integer dot: each
// qh byte spread over its 8 lanes and tested against the lane's own bit, a constant mask.
// Shifted instead by each lane's own amount, bytes have no instruction for it on x86 and LLVM
// did it a lane at a time; on i32 lanes (fifth_bits) and narrowed, each half-row took four
// byte loads, broadcasts, shifts and a narrowing, and Q5_0 decoded far slower
// (bench/RESULTS.md, 2026-12-05, "... Q5_0 and Q5_1's fifth bits as byte lanes").
template <int R>
Block<u8, 1, R, 16> fifth_bit_bytes(const Block<u8, R, 2, 1> &qh_bytes) {
  auto spread = reshape<1, R, 16>(broadcast_to<R, 2, 8>(qh_bytes));
  auto lane_bit = reshape<1, 1, 16>(cast<u8>(full<i32, 16>(1) << (arange<16>() & 7)));
  return minimum(spread & lane_bit, 1) << 4;
}

// The f16 at byte `offset` of each block, as f32 [R, 1, 1].
template <class Layout, int R>
Block<f32, R, 1, 1> block_half(Ptr<const u8> wq, const Block<i64, R, 1> &block, size_t offset) {
  static_assert(sizeof(Layout) % 2 == 0, "the f16 factors are addressed in halves: the block size must be even");
  return expand_dims<2>(cast<f32>(load(reinterpret<f16>(wq) + (block * int(sizeof(Layout) / 2) + int(offset / 2)))));
}

}  // namespace detail

// The shared shape of the three formats: Layout says whether there is an offset m and a qh.
template <class L, bool kHasMin, bool kHasHighBit>
struct HalfPartFormat {
  using Layout = L;
  using Quant = u8;
  static constexpr int kBlockElements = 32;
  static constexpr int kBlockBytes = int(sizeof(Layout));
  static constexpr int kParts = 2, kPartElements = 16;

  template <int R>
  using Part = Block<f32, R, 2, 8>;
  static Block<i32, 1, 2, 8> lanes() { return detail::half_block_lanes(); }
  template <int R>
  static Part<R> part_zeros() { return zeros<f32, R, 2, 8>(); }

  template <int R>
  struct Loaded {
    Block<u8, R, 2, 8> qs;
    std::vector<Block<u8, R, 2, 1>> qh;  // [p]: qh bytes 2p and 2p + 1 (empty without a fifth bit)
    Block<f32, R, 1, 1> d, m;            // m is zero without an offset
  };

  template <int R>
  static Loaded<R> load_block(Ptr<const u8> wq, const Block<i64, R, 1> &block) {
    auto base = expand_dims<2>(block * kBlockBytes);  // [R, 1, 1]
    Loaded<R> l{load(wq + (base + int(offsetof(Layout, qs)) + wide(detail::half_block_lanes()))), {},
                detail::block_half<Layout>(wq, block, offsetof(Layout, d)), zeros<f32, R, 1, 1>()};
    if constexpr (kHasMin) l.m = detail::block_half<Layout>(wq, block, offsetof(Layout, m));
    if constexpr (kHasHighBit) {
      auto pair = wide(reshape<1, 2, 1>(arange<2>()));  // [1, 2, 1]
      for (int p = 0; p < kParts; ++p) l.qh.push_back(load(wq + (base + (int(offsetof(Layout, qh)) + 2 * p) + pair)));
    }
    return l;
  }

  template <int R>
  static Part<R> part(const Loaded<R> &l, int p) {
    auto q = detail::nibbles(l.qs, p);
    if constexpr (kHasHighBit) q = q | detail::fifth_bits(l.qh[p]);
    if constexpr (kHasMin) return cast<f32>(q) * l.d + l.m;  // x = d * q + m
    else return cast<f32>(q - (kHasHighBit ? 16 : 8)) * l.d;  // x = d * (q - 16): Q5_0
  }
};

// x = d * q + m, q the 4-bit nibbles
using Q4_1Format = HalfPartFormat<formats::BlockQ4_1, true, false>;
// x = d * (q - 16), q 5 bits: the nibble and a bit of qh
using Q5_0Format = HalfPartFormat<formats::BlockQ5_0, false, true>;
// x = d * q + m, q 5 bits
using Q5_1Format = HalfPartFormat<formats::BlockQ5_1, true, true>;

}  // namespace kdsl::kernels
