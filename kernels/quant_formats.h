// quant_formats.h - how kdsl kernels read Q8_0, Q4_0, IQ4_NL and F8_E4M3 blocks in place: offsets and per-part decoding
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

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

// The offsets every such format derives from its block layout (an f16 d first, then qs), and
// its part geometry: kParts runs of kPartBytes quant bytes cover kElements values.
template <class L, class Q, int kElements, int kPartsPerBlock, int kBytesPerPart>
struct ScaledFormat {
  using Layout = L;
  using Quant = Q;
  static constexpr int kBlockElements = kElements;
  static constexpr int kBlockBytes = int(sizeof(Layout));
  static constexpr int kQuantOffset = int(offsetof(Layout, qs));
  static constexpr int kScaleStride = kBlockBytes / 2;
  static constexpr int kParts = kPartsPerBlock, kPartBytes = kBytesPerPart;
};

// A small integer n (0 <= n < 2^23) as f32 without a conversion instruction: the bits of
// 2^23 + n, minus 2^23 (exact). A GPU converts integers to floats at a quarter of its
// arithmetic rate (I2F), a bound for a decode product streaming quantized weights at memory
// speed; an OR and a subtraction run at the full rate. part_bits() below decodes so.
template <int... D>
Block<f32, D...> exact_small_int(const Block<i32, D...> &n, float minus) {
  return bitcast<f32>(n | 0x4B000000) - (8388608.0f + minus);
}

// x[i] = d * qs[i], qs int8
struct Q8_0Format : ScaledFormat<formats::BlockQ8_0, i8, formats::kQK8_0, 1, 32> {
  template <int... D>
  static Block<f32, D...> part(const Block<i8, D...> &q, int /*p*/) {
    return cast<f32>(q);
  }
  template <int... D>
  static Block<f32, D...> part_bits(const Block<i8, D...> &q, int /*p*/) {
    return exact_small_int(cast<i32>(q) + 128, 128.0f);
  }
};

// x[i] = d * (nibble_i - 8): elements 0..15 are the low nibbles of qs, 16..31 the high ones
struct Q4_0Format : ScaledFormat<formats::BlockQ4_0, u8, formats::kQK4_0, 2, 16> {
  template <int... D>
  static Block<f32, D...> part(const Block<u8, D...> &q, int p) {
    return cast<f32>(p == 0 ? (q & 15) : (q >> 4)) - 8.0f;
  }
  template <int... D>
  static Block<f32, D...> part_bits(const Block<u8, D...> &q, int p) {
    auto b = cast<i32>(q);
    return exact_small_int(p == 0 ? (b & 15) : (b >> 4), 8.0f);
  }
};

// part_bits(q, p) where the format has it, else part(q, p).
template <class F, class Q>
auto part_without_conversion(const Q &q, int p) {
  if constexpr (requires { F::part_bits(q, p); }) return F::part_bits(q, p);
  else return F::part(q, p);
}

// x[i] = d * kIQ4NLValues[nibble_i], the nibbles laid out as Q4_0's. The grid has no closed
// form. Where the nibbles come in rows of 16 (a block's part, as the tiles and decode kernels
// read them), each is looked up in the grid's row of 16 int8 levels and converted: one
// vpshufb for 16 on the host (src/codegen/host/lower_host.cpp, lookup_bytes_in_table), then
// the conversion to f32 that any 4-bit format takes. Picking each level by the tree of 15
// selects below took 15 blends a vector of 8 floats, a tenth of the f32 prefill tiles' time.
struct IQ4_NLFormat : ScaledFormat<formats::BlockIQ4_NL, u8, formats::kQK4_NL, 2, 16> {
  template <int... D>
  static Block<f32, D...> part(const Block<u8, D...> &q, int p) {
    auto nibble = p == 0 ? (q & 15) : (q >> 4);
    constexpr int dims[] = {D...};
    if constexpr (dims[sizeof...(D) - 1] == 16) return cast<f32>(looked_up(nibble, std::make_index_sequence<sizeof...(D)>()));
    else return levels<f32>(nibble);
  }

  // The int8 level of each nibble (0..15) of rows of 16, by a gather from the grid's row.
  template <int... D, size_t... Axis>
  static Block<i8, D...> looked_up(const Block<u8, D...> &nibble, std::index_sequence<Axis...>) {
    constexpr int last = int(sizeof...(D)) - 1;
    auto grid = levels<i8>(cast<u8>(reshape<(int(Axis) == last ? 16 : 1)...>(arange<16>())));  // the 16 levels, [1, .., 16]
    return gather(broadcast_to<D...>(grid), nibble, last);
  }

  // kIQ4NLValues[n] for each nibble n, as T (f32 for the dequantize path, i8 for the integer
  // dot products, which take the grid's small integers as they are). Round r keeps level[k],
  // the value among grid entries k * 2^r .. (k + 1) * 2^r - 1 that the nibble's low r bits
  // pick; each round halves the candidates by the next bit.
  template <class T, int... D>
  static Block<T, D...> levels(const Block<u8, D...> &nibble) {
    std::vector<Block<T, D...>> level;
    for (int k = 0; k < 8; ++k)
      level.push_back(where((nibble & 1) != 0, full<T, D...>(formats::kIQ4NLValues[2 * k + 1]), full<T, D...>(formats::kIQ4NLValues[2 * k])));
    for (int bit = 2; bit < 16; bit *= 2) {
      std::vector<Block<T, D...>> next;
      for (size_t k = 0; k + 1 < level.size(); k += 2) next.push_back(where((nibble & bit) != 0, level[k + 1], level[k]));
      level = std::move(next);
    }
    return level[0];
  }
};

// x[i] = d * e4m3(qs[i]) (kdsl/formats/fp8.h). The E4M3 code's 7 magnitude bits, placed at bits
// 7..13 of an f16, are the same number times 2^-8: the exponent fields line up (4 bits of the
// f16's 5) and E4M3's subnormals land on f16 subnormals, which the conversion to f32 (F16C's
// vcvtph2ps, PTX's cvt.f32.f16) reads exactly. So decoding is two shifts, an f16 -> f32
// conversion and an exact multiply by 256, and never meets an f32 subnormal (which a
// flush-to-zero mode would read as 0). The NaN codes 0x7f/0xff, which would decode to 480, are
// picked out: kdsl's quantizer never writes them, but a file may hold them.
struct F8_E4M3Format : ScaledFormat<formats::BlockF8_E4M3, u8, formats::kQK_F8, 1, 32> {
  template <int... D>
  static Block<f32, D...> part(const Block<u8, D...> &q, int /*p*/) {
    // The bit work on 16-bit lanes (twice as many a vector as i32's): sign to bit 15 (wrapping
    // i16's shift, as intended), magnitude to bits 7..13, a NaN code to f16's NaN.
    auto b = cast<i16>(q);
    auto magnitude = b & 0x7f;
    auto bits = where(magnitude == 0x7f, full<i16, D...>(0x7e00), (magnitude << 7) | ((b & 0x80) << 8));
    return cast<f32>(bitcast<f16>(bits)) * 256.0f;
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
static_assert(check_format<Q8_0Format>() && check_format<Q4_0Format>() && check_format<IQ4_NLFormat>() && check_format<F8_E4M3Format>());

}  // namespace kdsl::kernels
