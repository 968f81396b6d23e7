// matvec_int8.h - decode and few-row products out[r,n] = x[r,:] . W[n,:] (+ bias[n]) over Q8_0 / Q4_0 / IQ4_NL weights by integer dot products with quantized activations
#pragma once
#include "kernels/quant_formats.h"

namespace kdsl::kernels {

// How a weight format meets the activation blocks (quantize_activations.h) in dot4: from the
// quant bytes of one block of each weight row ([1, BN, 1] pointers to them) and each row of x's
// block ([BR, 1, 1] pointers to its 32 int8), four exact i32 partial sums per (x row, weight
// row), [BR, BN, 4], whose total is the block's integer dot product. Each takes its bytes 16 at
// a time, so that every dot4 row is 16 bytes: the host lowering puts four weight rows' 16 bytes
// side by side in one 64-byte vpdpbusd (lower_host.cpp, emit_packed_dot4), and the four sums a
// row keeps are the lanes its f32 accumulator keeps across the loop (matvec_int8 below).
inline auto int8_half_block() { return reshape<1, 1, 16>(arange<16>()); }

// A block's activations, elements 0..15 or 16..31 from `first` ([BR, 1, 16]). The quantizer
// never writes -128 (quantize_activations.h: |q| <= 127); the max says so to the lowering,
// where it lets s8 weights meet them through vpsignb and vpmaddubsw on a CPU without VNNI
// (src/codegen/host/int_dot.h), and costs one vpmaxsb shared by every weight row.
template <class XP>
auto activation_half(const XP &x_block, int first) {
  return maximum(load(x_block + (int8_half_block() + first)), full<i8, 1, 1, 16>(-127));
}

// A block's sums from its signed int8 weights, elements 0..15 and 16..31 ([1, BN, 16] each),
// against the same halves of the activations.
template <class W, class XP>
auto int8_halves_sums(const W &w_low, const W &w_high, const XP &x_block) {
  auto x_low = activation_half(x_block, 0), x_high = activation_half(x_block, 16);  // [BR, 1, 16]
  return dot4(w_high, x_high, dot4(w_low, x_low, zeros<i32, XP::dims[0], W::dims[1], 4>()));
}

// Q8_0: w = d * qs, qs int8: each half of the 32 quant bytes against that half of the activations.
struct Q8_0IntDot {
  using Format = Q8_0Format;

  template <class QP, class XP>
  static auto sums(const QP &quants, const XP &x_block) {
    auto j = int8_half_block();
    return int8_halves_sums(load(quants + j), load(quants + (j + 16)), x_block);
  }
};

// Q4_0: w = d * (nibble - 8), low nibbles elements 0..15, high nibbles 16..31. The nibbles
// (u8, 0..15) take the activations as they are (u8 x i8: one vpdpbusd, no correction), and the
// -8 comes off once per block as 8 * the activations' group sums, which depend on x alone: the
// sums start from it.
struct Q4_0IntDot {
  using Format = Q4_0Format;

  template <class QP, class XP>
  static auto sums(const QP &quants, const XP &x_block) {
    auto j = int8_half_block();
    auto x_low = load(x_block + j), x_high = load(x_block + (j + 16));  // [BR, 1, 16]
    auto q = load(quants + j);                                          // [1, BN, 16]
    auto eights = full<u8, 1, 1, 16>(8);
    auto offset = dot4(eights, x_low) + dot4(eights, x_high);          // [BR, 1, 4]
    auto start = zeros<i32, XP::dims[0], QP::dims[1], 4>() - offset;  // [BR, BN, 4]
    return dot4(q >> 4, x_high, dot4(q & 15, x_low, start));
  }
};

// IQ4_NL: w = d * grid[nibble], the grid's levels small integers (-127..113): each nibble
// becomes its level as an int8 (a gather from the grid's row) and meets the activations as
// Q8_0's int8 quants do.
struct IQ4_NLIntDot {
  using Format = IQ4_NLFormat;

  template <class QP, class XP>
  static auto sums(const QP &quants, const XP &x_block) {
    auto q = load(quants + int8_half_block());  // [1, BN, 16]
    // The grid's 16 levels as a row, from constants alone (the selects fold away), looked up
    // by each nibble: one vpshufb for 16 on the host (src/codegen/host/lower_host.cpp,
    // lookup_bytes_in_table), where picking each level by the select tree took 15 blends.
    auto grid = broadcast_to<1, QP::dims[1], 16>(Format::levels<i8>(cast<u8>(reshape<1, 1, 16>(arange<16>()))));
    return int8_halves_sums(gather(grid, q & 15, 2), gather(grid, q >> 4, 2), x_block);
  }
};

// W is [N][K] in P's format, K a multiple of 32; x arrives as activation blocks xq / xd of
// `rows` rows (1 for decode, up to BR per program: program (i, j) takes rows j*BR .. j*BR +
// BR - 1, so a grid of cdiv(rows, BR) along axis 1 covers a prefill). One program per BN weight rows spread N/BN apart
// (spread_rows in common.h), one block of each per step: its quant bytes are read once for
// every row of x and turned into [BR, BN, 4] integer sums by dot4, which a [BR, BN, 4] f32
// accumulator takes scaled by the weight's and the activation's block scales; the four lanes
// of each row are summed once, after the loop, as llama.cpp's vec_dot keeps vpdpbusd's lanes.
// Summing each block's four sums first instead costs a horizontal sum per block and row: the
// kernel that did so (with one weight row a vpdpbusd) decoded Q4_0 slower than this one
// (bench/RESULTS.md, 2026-12-03, "integer-dot kernels: four rows a vpdpbusd"). PREFETCH > 0 asks for each
// weight row's bytes that far ahead (matvec.h says why). Rows of x past `rows` and of W past N
// are clamped for loading; stores are masked.
//
// Numerics (kernels/library.h has the contract): the integer sums are exact, each block's
// four group sums are four f32 products float(isum_g) * (d_w * d_x) and the accumulation is in f32, so
// against the same quantize-then-integer-dot done in double the error is f32 rounding alone.
// Against the f32 dequantize path the difference is the activations' quantization:
// |y_int8 - y_f32| <= sum over blocks of (d_x / 2) * sum |w| over the block, plus f32 rounding.
template <class P, int BR, int BN, bool HAS_BIAS, int PREFETCH = 0>
void matvec_int8(Ptr<const i8> xq, Ptr<const f32> xd, Ptr<const typename P::Format::Quant> wq, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> rows,
                 Scalar<i32> N, Scalar<i32> K) {
  using F = typename P::Format;
  auto wd = reinterpret<f16>(wq);  // the weight scales, at half index block * kScaleStride
  auto blocks = K / F::kBlockElements;
  auto r = program_id(1) * BR + arange<BR>();  // this program's rows of x
  auto rn = spread_rows<BN>(N);
  auto x_row = reshape<BR, 1, 1>(wide(minimum(r, rows - 1)));
  auto w_block = reshape<1, BN, 1>(wide(minimum(rn, N - 1)) * wide(blocks));  // each weight row's first block
  auto acc = for_range(0, blocks, 1, zeros<f32, BR, BN, 4>(), [&](auto b, auto acc) {
    auto block = w_block + wide(b);  // [1, BN, 1]
    if constexpr (PREFETCH > 0) prefetch(wq + (block * F::kBlockBytes + PREFETCH));
    auto d_w = cast<f32>(load(wd + block * F::kScaleStride));  // [1, BN, 1]
    auto x_block = x_row * wide(blocks) + wide(b);             // [BR, 1, 1]
    auto d_x = load(xd + x_block);
    auto s = P::sums(wq + (block * F::kBlockBytes + F::kQuantOffset), xq + x_block * F::kBlockElements);  // [BR, BN, 4]
    return acc + cast<f32>(s) * (d_w * d_x);
  });
  auto y = sum<2>(acc);
  if constexpr (HAS_BIAS) y = y + row(load(bias + minimum(rn, N - 1)));
  store(out + col(wide(r) * wide(N)) + row(rn), y, col(r < rows) && row(rn < N));
}

}  // namespace kdsl::kernels
