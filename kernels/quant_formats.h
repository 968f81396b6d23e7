// quant_formats.h - how kdsl kernels read ggml's Q8_0 and Q4_0 blocks in place: offsets and per-part decoding
#pragma once
#include <cstddef>

#include "kernels/common.h"
#include <kdsl/formats/quant_blocks.h>

namespace kdsl::kernels {

// A quantized weight arrives at a kernel once, as Ptr<Quant> for the quant bytes; the kernels
// read the scales through reinterpret<f16> of the same address. Block b
// (counted over the whole matrix, row-major) has its f16 scale d at half index
// b * kScaleStride and its quant bytes at byte b * kBlockBytes + kQuantOffset. Each block
// yields its 32 values as kParts runs of kPartBytes: run p, decoded from the same
// kPartBytes quant bytes by part(q, p), holds elements p * kPartBytes .. + kPartBytes - 1,
// to be multiplied by d. Decoding is exact in f32 (small integers); only the scale rounds.
// The layouts come from kdsl/formats/quant_blocks.h, shared with the readers and dequantizer.

// x[i] = d * qs[i], qs int8
struct Q8_0Format {
  using Layout = formats::BlockQ8_0;
  using Quant = i8;
  static constexpr int kBlockElements = formats::kQK8_0;
  static constexpr int kBlockBytes = int(sizeof(Layout));
  static constexpr int kQuantOffset = int(offsetof(Layout, qs));
  static constexpr int kScaleStride = kBlockBytes / 2;
  static constexpr int kParts = 1, kPartBytes = 32;

  template <int... D>
  static Block<f32, D...> part(const Block<i8, D...> &q, int /*p*/) {
    return cast<f32>(q);
  }
};

// x[i] = d * (nibble_i - 8): elements 0..15 are the low nibbles of qs, 16..31 the high ones
struct Q4_0Format {
  using Layout = formats::BlockQ4_0;
  using Quant = u8;
  static constexpr int kBlockElements = formats::kQK4_0;
  static constexpr int kBlockBytes = int(sizeof(Layout));
  static constexpr int kQuantOffset = int(offsetof(Layout, qs));
  static constexpr int kScaleStride = kBlockBytes / 2;
  static constexpr int kParts = 2, kPartBytes = 16;

  template <int... D>
  static Block<f32, D...> part(const Block<u8, D...> &q, int p) {
    return cast<f32>(p == 0 ? (q & 15) : (q >> 4)) - 8.0f;
  }
};

// A group of BB consecutive blocks of BN rows of W, loaded: the quant bytes [BN, BB, kPartBytes]
// and the scales as f32 [BN, BB, 1].
template <class Q, class D>
struct BlockGroup {
  Q quants;
  D scales;
};

// Loads the blocks block[n, i] (W's block index, [BN, BB]) of format F. `in_row` ([1, BB]) says
// which of the BB lie inside their row; with `masked` the others read as zeros.
template <class F, class Blocks, class InRow>
auto load_block_group(Ptr<const typename F::Quant> wq, const Blocks &block, const InRow &in_row, bool masked) {
  auto rj = reshape<1, 1, F::kPartBytes>(arange<F::kPartBytes>());
  auto in_row3 = expand_dims<2>(in_row);
  auto q_ptr = wq + (expand_dims<2>(block * F::kBlockBytes + F::kQuantOffset) + wide(rj));
  auto d_ptr = reinterpret<f16>(wq) + block * F::kScaleStride;
  auto q = masked ? load(q_ptr, in_row3, 0) : load(q_ptr);
  auto d = expand_dims<2>(cast<f32>(masked ? load(d_ptr, in_row, 0) : load(d_ptr)));
  return BlockGroup<decltype(q), decltype(d)>{q, d};
}

// What every format must satisfy for the kernels' offset arithmetic.
template <class F>
constexpr bool check_format() {
  static_assert(offsetof(typename F::Layout, d) == 0, "the kernels read a block's f16 scale at its start");
  static_assert(F::kBlockBytes % 2 == 0, "the f16 scales are addressed in halves: the block size must be even");
  static_assert(F::kParts * F::kPartBytes == F::kBlockElements, "a block's parts must cover its elements");
  return true;
}
static_assert(check_format<Q8_0Format>() && check_format<Q4_0Format>());

}  // namespace kdsl::kernels
