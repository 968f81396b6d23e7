// matvec_int8.h - decode and few-row products out[r,n] = x[r,:] . W[n,:] (+ bias[n]) over Q8_0 / Q4_0 / IQ4_NL weights by integer dot products with quantized activations
#pragma once
#include "kernels/quant_formats.h"
#include "kernels/quantize_activations.h"
#include "kernels/weight_blocks.h"

namespace kdsl::kernels {

// How a weight format meets the activation blocks (quantize_activations.h) in dot4: from the
// quant bytes of one block of each weight row (below), each row of x's block ([BR, 1, 1]
// pointers to its 32 int8) and that block's integer sum (Q8_1-style blocks: a [BR, 1, 1]
// pointer, read where the format has an offset), exact i32 partial sums per (x row, weight
// row) whose total is the block's integer dot product. The host lowering puts as many weight rows' pieces side by
// side in one 64-byte vpdpbusd as fit (lower_host.cpp, emit_packed_dot4), and the sums a row
// keeps are the lanes its f32 accumulator keeps across the loop (matvec_int8 below).

// A piece's P offsets along the last axis ([1, 1, P]), of quant bytes or of activations.
template <int P>
auto quant_piece() {
  return reshape<1, 1, P>(arange<P>());
}

// A block's activations, elements first .. first + P - 1 ([BR, 1, P]). On a CPU without VNNI
// two s8 operands meet through vpsignb and vpmaddubsw only where one of them is within +-127
// (src/codegen/host/int_dot.h). Weights stored as bytes (Q8_0's) may hold -128, so unless
// WEIGHTS_WITHIN_127 a max says of the activations what the quantizer guarantees
// (quantize_activations.h: |q| <= 127), a vpmaxsb shared by every weight row. Weights looked up
// in a table of levels within +-127 (IQ4_NL's grid) carry that range themselves (the lowering
// reads it from the table), and there the max would only cost a load, a vpmaxsb and a register
// broadcast where the broadcast reads memory.
template <int P, bool WEIGHTS_WITHIN_127, class XP>
auto activation_piece(const XP &x_block, int first) {
  auto x = load(x_block + (quant_piece<P>() + first));
  if constexpr (WEIGHTS_WITHIN_127) return x;
  else return quants_within_127(x);
}

// The policies below read a block's quant bytes through `quants(offset)`: every weight row's
// P bytes at `offset` .. + P - 1 (the format's Quant type), as rows of 16 bytes
// ([1, BN * P / 16, 16]), the shape the host lowering computes bytes on as vectors (byte
// lanes); `as_pieces` (below) reshapes them to [1, BN, P] for dot4. P is 16 where the rows are
// as stored (matvec_int8: a row's piece is a row of 16, four rows' pieces to a 64-byte
// vpdpbusd, 4 lanes a row) and 4 where they are grouped (matvec_grouped_int8: four rows'
// pieces to a row of 16, 16 rows' pieces to a vpdpbusd, a row's sum in one lane). Each
// returns [BR, BN, P / 4] exact i32 sums.
template <int P, int BN, class Q>
auto as_pieces(const Q &rows_of_16) {
  return reshape<1, BN, P>(rows_of_16);
}

// A block's sums from its signed int8 weights, elements 0..15 (`low`) and 16..31 (`high`) a
// piece at a time, against the same pieces of the activations; `value` makes a piece's weights
// from its quant bytes (as rows of 16). WEIGHTS_WITHIN_127: `value` never makes -128
// (activation_piece says why that matters).
template <int P, int BR, int BN, bool WEIGHTS_WITHIN_127, class QS, class XP, class V>
auto int8_halves_sums(const QS &quants, const XP &x_block, V &&value) {
  auto sums = zeros<i32, BR, BN, P / 4>();
  for (int i = 0; i < 16; i += P) {
    auto low = as_pieces<P, BN>(value(i)), high = as_pieces<P, BN>(value(16 + i));
    sums = dot4(high, activation_piece<P, WEIGHTS_WITHIN_127>(x_block, 16 + i), dot4(low, activation_piece<P, WEIGHTS_WITHIN_127>(x_block, i), sums));
  }
  return sums;
}

// Q8_0: w = d * qs, qs int8: each half of the 32 quant bytes against that half of the activations.
struct Q8_0IntDot {
  using Format = Q8_0Format;

  template <int P, int BR, int BN, class QS, class XP, class SP>
  static auto sums(const QS &quants, const XP &x_block, const SP &) {
    return int8_halves_sums<P, BR, BN, false>(quants, x_block, [&](int e) { return quants(e); });
  }
};

// Q4_0: w = d * (nibble - 8), low nibbles elements 0..15, high nibbles 16..31. The nibbles
// (u8, 0..15) take the activations as they are (u8 x i8: one vpdpbusd, no correction), and the
// -8 comes off once per block as 8 * the block's sum of activations, which the quantizer makes
// (as the prefill tiles read it): the sums start from it (in the first lane where a row keeps
// four). Summed here from the block's quants it cost two byte dots, a horizontal sum and a
// broadcast every block (bench/RESULTS.md, 2026-12-07, the loop's instructions before and after).
struct Q4_0IntDot {
  using Format = Q4_0Format;

  template <int P, int BR, int BN, class QS, class XP, class SP>
  static auto sums(const QS &quants, const XP &x_block, const SP &x_sum) {
    auto eight_sums = load(x_sum) * 8;  // [BR, 1, 1], |8 * sum| <= 8 * 32 * 127
    auto acc = [&] {
      if constexpr (P == 16) return zeros<i32, BR, BN, 4>() - where(quant_piece<4>() == 0, eight_sums, 0);  // [BR, BN, 4]
      else return zeros<i32, BR, BN, P / 4>() - eight_sums;
    }();
    for (int i = 0; i < 16; i += P) {
      auto q = quants(i);  // rows of 16
      acc = dot4(as_pieces<P, BN>(q >> 4), load(x_block + (quant_piece<P>() + (16 + i))),
                 dot4(as_pieces<P, BN>(q & 15), load(x_block + (quant_piece<P>() + i)), acc));
    }
    return acc;
  }
};

// IQ4_NL: w = d * grid[nibble], the grid's levels small integers (-127..113): each nibble
// becomes its level as an int8 (a gather from the grid's row) and meets the activations as
// Q8_0's int8 quants do.
struct IQ4_NLIntDot {
  using Format = IQ4_NLFormat;

  template <int P, int BR, int BN, class QS, class XP, class SP>
  static auto sums(const QS &quants, const XP &x_block, const SP &) {
    // The grid's 16 levels as a row, from constants alone (the selects fold away), looked up
    // by each nibble in rows of 16: one vpshufb for 16 on the host
    // (src/codegen/host/lower_host.cpp, lookup_bytes_in_table), where picking each level by
    // the select tree took 15 blends. Element e's level: the nibble of quant byte e % 16 (low
    // for e < 16).
    constexpr int kRows = BN * P / 16;
    static_assert(BN * P % 16 == 0, "IQ4_NL's lookup takes whole rows of 16 nibbles");
    auto grid = broadcast_to<1, kRows, 16>(Format::levels<i8>(cast<u8>(reshape<1, 1, 16>(arange<16>()))));
    return int8_halves_sums<P, BR, BN, true>(quants, x_block, [&](int e) {  // levels -127..113
      auto q = quants(e % 16);
      return gather(grid, e < 16 ? (q & 15) : (q >> 4), 2);
    });
  }
};

// The quant bytes of weight rows as stored: block `block` ([1, BN, 1], counted over the
// matrix) of `wq` (the format's Quant), P = 16.
template <class F, class QP, class B>
auto stored_quants(const QP &wq, const B &block) {
  return [=](int offset) { return load((wq + (block * F::kBlockBytes + F::kQuantOffset)) + (quant_piece<16>() + offset)); };
}

// W is [N][K] in P's format, K a multiple of 32; x arrives as activation blocks xq / xd / xs
// (quants, scale and sum: quantize_activations_sums<32, 32>) of `rows` rows (1 for decode, up to BR per program: program (i, j) takes rows j*BR .. j*BR +
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
void matvec_int8(Ptr<const i8> xq, Ptr<const f32> xd, Ptr<const i32> xs, Ptr<const typename P::Format::Quant> wq, Ptr<const f32> bias, Ptr<f32> out,
                 Scalar<i32> rows, Scalar<i32> N, Scalar<i32> K) {
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
    auto s = P::template sums<16, BR, BN>(stored_quants<F>(wq, block), xq + x_block * F::kBlockElements, xs + x_block);  // [BR, BN, 4]
    return acc + cast<f32>(s) * (d_w * d_x);
  });
  auto y = sum<2>(acc);
  store_product<HAS_BIAS>(out, bias, y, r, rn, rows, N);
}

// The same product over weights grouped by R rows (formats/row_groups.h; GroupedBlocks,
// weight_blocks.h), as matvec_grouped_sums (matvec_int8_sums.h) does for the formats with
// sums: program i takes group i, rows iR .. iR + R - 1, and reads each block's scales of all
// R rows as one run and its quants 4 bytes a row, 16 rows to a vpdpbusd, each row's sum in its
// own lane. W holds N / R groups (N a multiple of R: Library::row_group). PREFETCH: as
// matvec_grouped_sums'.
template <class P, int BR, int R, bool HAS_BIAS, int64_t PREFETCH = 0>
void matvec_grouped_int8(Ptr<const i8> xq, Ptr<const f32> xd, Ptr<const i32> xs, Ptr<const u8> wq, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> rows,
                         Scalar<i32> N, Scalar<i32> K) {
  using F = typename P::Format;
  using Blocks = GroupedBlocks<typename F::Layout, R>;
  constexpr int L = Blocks::kPiece / 4;
  auto blocks = K / F::kBlockElements;
  auto r = program_id(1) * BR + arange<BR>();  // this program's rows of x
  auto rn = program_id(0) * R + arange<R>();   // the group's weight rows
  auto x_row = reshape<BR, 1, 1>(wide(minimum(r, rows - 1)));
  auto first_block = wide(program_id(0)) * wide(blocks);  // the group's first block
  auto acc = for_range(0, blocks, 1, zeros<f32, BR, R, L>(), [&](auto b, auto acc) {
    const Blocks w{wq, first_block + wide(b)};
    if constexpr (PREFETCH > 0) w.template prefetch_ahead<PREFETCH>();
    auto d_w = w.half(offsetof(typename F::Layout, d), wide(zeros<i32, 1, 1, 1>()));  // [1, R, 1]
    auto x_block = x_row * wide(blocks) + wide(b);                                    // [BR, 1, 1]
    auto d_x = load(xd + x_block);
    auto quants = [&](int offset) {  // the R rows' 4 bytes at `offset`, as rows of 16
      auto bytes = w.run_of_16(F::kQuantOffset + offset);
      if constexpr (std::is_same_v<typename F::Quant, u8>) return bytes;
      else return bitcast<typename F::Quant>(bytes);
    };
    auto s = P::template sums<Blocks::kPiece, BR, R>(quants, xq + x_block * F::kBlockElements, xs + x_block);  // [BR, R, L]
    return acc + cast<f32>(s) * (d_w * d_x);
  });
  auto y = sum<2>(acc);
  store_product<HAS_BIAS>(out, bias, y, r, rn, rows, N);
}

}  // namespace kdsl::kernels
