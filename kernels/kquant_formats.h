// kquant_formats.h - how kdsl kernels read ggml's Q6_K, Q4_K and Q5_K super-blocks in place: loading a block of R rows, decoding it in 32-element parts
#pragma once
#include <cstddef>
#include <vector>

#include "kernels/common.h"
#include <kdsl/formats/quant_blocks.h>

namespace kdsl::kernels {

// A k-quant super-block holds 256 elements with per-sub-block scales (quant_blocks.h). As
// for Q8_0 / Q4_0 (quant_formats.h) the weights arrive once, as Ptr<u8>; the f16 factors are
// read through reinterpret<f16> of the same address. Block b (counted over the whole matrix,
// row-major) starts at byte b * kBlockBytes.
//
// load_block<R>(wq, block) reads block block[r] ([R, 1] i64) of R rows at once: every byte
// the block's 256 values need, as [R, ...] tiles with the scales already multiplied out to
// f32. part(loaded, p) then gives elements p * 32 .. p * 32 + 31 of each block as an f32
// tile of shape Part<R> ([R, 32], or [R, 2, 16] where 16-lane sub-blocks have their own
// scales), lane j of the 32 at lanes()[j] ([1, 32] or [1, 2, 16] offsets), exactly the
// reference dequantizer's values (the integer decoding and the
// products d * sc are exact in f32; the reference rounds the same way). A kernel loads a
// block once and takes its kParts parts in turn: the parts share the quant bytes (Q6_K's
// qh byte l serves four parts), so loading per part would read them up to four times.
//
// The shifts are C++ constants (p is unrolled): the DSL allows shifts by blocks, but x86 has
// no per-lane byte shift, so constant shifts keep the unpacking to a few vector ops.

// x = d * scales[i / 16] * (q - 32), q 6 bits: the low 4 from ql, the high 2 from qh.
// Element i = h * 128 + qq * 32 + l (half h, quarter qq, lane l < 32) takes nibble qq / 2 of
// ql[h * 64 + (qq % 2) * 32 + l] and bits 2 * qq .. 2 * qq + 1 of qh[h * 32 + l]. The
// part's 32 lanes are shaped [R, 2, 16] while decoding, so each 16-lane sub-block meets its
// scale by broadcasting, and stay so: reshaped to [R, 32] inside a loop nest, the lane index
// would become j / 16 and j % 16, which the host backend's vectorizer turns into gathers.
struct Q6_KFormat {
  using Layout = formats::BlockQ6_K;
  using Quant = u8;
  static constexpr int kBlockElements = formats::kQK_K;
  static constexpr int kBlockBytes = int(sizeof(Layout));
  static constexpr int kParts = 8, kPartElements = 32;
  static constexpr int kScaleHalf = int(offsetof(Layout, d)) / 2;  // d's half index within the block

  template <int R>
  using Part = Block<f32, R, 2, 16>;
  static Block<i32, 1, 2, 16> lanes() { return reshape<1, 2, 16>(arange<32>()); }
  template <int R>
  static Part<R> part_zeros() { return zeros<f32, R, 2, 16>(); }

  template <int R>
  struct Loaded {
    std::vector<Block<u8, R, 2, 16>> ql;     // [h * 2 + qq % 2]
    std::vector<Block<u8, R, 2, 16>> qh;     // [h]
    std::vector<Block<f32, R, 2, 1>> scale;  // [p]: d * scales[2 * p + s] for part p's two sub-blocks s
  };

  template <int R>
  static Loaded<R> load_block(Ptr<const u8> wq, const Block<i64, R, 1> &block) {
    auto wd = reinterpret<f16>(wq);
    auto base = expand_dims<2>(block * kBlockBytes);                       // [R, 1, 1]
    auto lanes = wide(reshape<1, 2, 16>(arange<32>()));                    // [1, 2, 16]
    auto pair = wide(reshape<1, 2, 1>(arange<2>()));                       // [1, 2, 1]
    auto d = expand_dims<2>(cast<f32>(load(wd + block * (kBlockBytes / 2) + kScaleHalf)));  // [R, 1, 1]
    Loaded<R> l;
    for (int i = 0; i < 4; ++i) l.ql.push_back(load(wq + (base + (int(offsetof(Layout, ql)) + i * 32) + lanes)));
    for (int h = 0; h < 2; ++h) l.qh.push_back(load(wq + (base + (int(offsetof(Layout, qh)) + h * 32) + lanes)));
    for (int p = 0; p < kParts; ++p) {
      auto sc = bitcast<i8>(load(wq + (base + (int(offsetof(Layout, scales)) + 2 * p) + pair)));
      l.scale.push_back(cast<f32>(sc) * d);
    }
    return l;
  }

  template <int R>
  static Part<R> part(const Loaded<R> &l, int p) {
    int h = p / 4, qq = p % 4;
    auto ql = l.ql[h * 2 + qq % 2];
    auto low = qq < 2 ? (ql & 15) : (ql >> 4);
    // bits 2qq, 2qq + 1 of qh moved to bits 4, 5 with one shift and one mask
    auto qh = l.qh[h];
    auto high = qq < 2 ? ((qh << (4 - 2 * qq)) & 48) : qq == 2 ? (qh & 48) : ((qh >> 2) & 48);
    return (cast<f32>(low | high) - 32.0f) * l.scale[p];
  }
};

// Q4_K's and Q5_K's factors of sub-block j (0..7), d * sc[j] and dmin * m[j]: sc and m are 6
// bits each, packed into 12 bytes (models::unpack_scale_min_k4, decoded here from the bytes as
// loaded), multiplied by the block's f16 d and dmin.
template <class Layout, int R>
void load_scales_mins_k4(Ptr<const u8> wq, const Block<i64, R, 1> &block, std::vector<Block<f32, R, 1>> &scale,
                         std::vector<Block<f32, R, 1>> &min) {
  auto wd = reinterpret<f16>(wq);
  auto base = block * int(sizeof(Layout));  // [R, 1]
  auto half = block * int(sizeof(Layout) / 2);
  auto d = cast<f32>(load(wd + half + int(offsetof(Layout, d)) / 2));
  auto dmin = cast<f32>(load(wd + half + int(offsetof(Layout, dmin)) / 2));
  auto byte = [&](int i) { return load(wq + (base + (int(offsetof(Layout, scales)) + i))); };  // [R, 1]
  std::vector<Block<u8, R, 1>> s;
  for (int i = 0; i < formats::kKScaleSize; ++i) s.push_back(byte(i));
  for (int j = 0; j < 8; ++j) {
    auto sc = j < 4 ? (s[j] & 63) : ((s[j + 4] & 15) | ((s[j - 4] >> 6) << 4));
    auto m = j < 4 ? (s[j + 4] & 63) : ((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    scale.push_back(cast<f32>(sc) * d);
    min.push_back(cast<f32>(m) * dmin);
  }
}

// x = d * sc[j] * q - dmin * m[j] for sub-block j = i / 32, q 4 bits: sub-blocks 2c and 2c + 1
// take the low and the high nibbles of qs[c * 32 .. c * 32 + 31] (scales as load_scales_mins_k4).
// Q5_K (kHighBit) adds a fifth bit: sub-block j takes bit j of qh[l] for its lane l.
template <class L, bool kHighBit>
struct SubBlock32Format {
  using Layout = L;
  using Quant = u8;
  static constexpr int kBlockElements = formats::kQK_K;
  static constexpr int kBlockBytes = int(sizeof(Layout));
  static constexpr int kParts = 8, kPartElements = 32;

  template <int R>
  using Part = Block<f32, R, kPartElements>;
  static Block<i32, 1, kPartElements> lanes() { return row(arange<kPartElements>()); }
  template <int R>
  static Part<R> part_zeros() { return zeros<f32, R, kPartElements>(); }

  template <int R>
  struct Loaded {
    std::vector<Block<u8, R, 32>> qs;          // [c]
    std::vector<Block<u8, R, 32>> qh;          // [0] with kHighBit, else empty
    std::vector<Block<f32, R, 1>> scale, min;  // [j]: d * sc[j], dmin * m[j]
  };

  template <int R>
  static Loaded<R> load_block(Ptr<const u8> wq, const Block<i64, R, 1> &block) {
    auto base = block * kBlockBytes;  // [R, 1]
    auto lanes = row(wide(arange<32>()));
    Loaded<R> l;
    load_scales_mins_k4<Layout>(wq, block, l.scale, l.min);
    for (int c = 0; c < 4; ++c) l.qs.push_back(load(wq + (base + (int(offsetof(Layout, qs)) + c * 32) + lanes)));
    if constexpr (kHighBit) l.qh.push_back(load(wq + (base + int(offsetof(Layout, qh)) + lanes)));
    return l;
  }

  template <int R>
  static Part<R> part(const Loaded<R> &l, int p) {
    auto q = p % 2 == 0 ? (l.qs[p / 2] & 15) : (l.qs[p / 2] >> 4);
    if constexpr (kHighBit) {
      // bit p of qh moved to bit 4 with one constant shift and one mask
      auto qh = l.qh[0];
      q = q | (p <= 4 ? ((qh << (4 - p)) & 16) : ((qh >> (p - 4)) & 16));
    }
    return cast<f32>(q) * l.scale[p] - l.min[p];
  }
};

using Q4_KFormat = SubBlock32Format<formats::BlockQ4_K, false>;
using Q5_KFormat = SubBlock32Format<formats::BlockQ5_K, true>;

// What the kernels' offset arithmetic assumes of a k-quant format.
template <class F>
constexpr bool check_kquant_format() {
  static_assert(F::kBlockBytes % 2 == 0, "the f16 factors are addressed in halves: the block size must be even");
  static_assert(F::kParts * F::kPartElements == F::kBlockElements, "a block's parts must cover its elements");
  return true;
}
static_assert(check_kquant_format<Q6_KFormat>() && check_kquant_format<Q4_KFormat>() && check_kquant_format<Q5_KFormat>());
static_assert(offsetof(formats::BlockQ6_K, d) % 2 == 0, "Q6_K's d is read as a half: it must sit at an even offset");
static_assert(offsetof(formats::BlockQ4_K, d) % 2 == 0 && offsetof(formats::BlockQ4_K, dmin) % 2 == 0,
              "Q4_K's d and dmin are read as halves: they must sit at even offsets");
static_assert(offsetof(formats::BlockQ5_K, d) % 2 == 0 && offsetof(formats::BlockQ5_K, dmin) % 2 == 0,
              "Q5_K's d and dmin are read as halves: they must sit at even offsets");

}  // namespace kdsl::kernels
