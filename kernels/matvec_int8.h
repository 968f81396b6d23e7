// matvec_int8.h - decode and few-row products out[r,n] = x[r,:] . W[n,:] (+ bias[n]) over Q8_0 / Q4_0 weights by integer dot products with quantized activations
#pragma once
#include "kernels/quant_formats.h"

namespace kdsl::kernels {

// How a weight format meets the activation blocks (quantize_activations.h) in dot4: the quant
// bytes of one block of each weight row ([1, BN, kQuantBytes]) and each row of x's block
// ([BR, 1, 1] pointers to its 32 int8) give kGroups exact i32 partial sums per (x row, weight
// row), [BR, BN, kGroups], whose total is the block's integer dot product.

// Q8_0: w = d * qs, qs int8: the 32 quant bytes against the 32 activation bytes.
struct Q8_0IntDot {
  using Format = Q8_0Format;
  static constexpr int kQuantBytes = 32, kGroups = 8;

  template <class Q, class XP>
  static auto sums(const Q &q, const XP &x_block) {
    return dot4(q, load(x_block + reshape<1, 1, 32>(arange<32>())));
  }
};

// Q4_0: w = d * (nibble - 8), low nibbles elements 0..15, high nibbles 16..31. The nibbles
// (u8, 0..15) take the activations as they are (u8 x i8: one vpdpbusd, no correction), and the
// -8 comes off once per block as 8 * the activations' group sums, which depend on x alone.
struct Q4_0IntDot {
  using Format = Q4_0Format;
  static constexpr int kQuantBytes = 16, kGroups = 4;

  template <class Q, class XP>
  static auto sums(const Q &q, const XP &x_block) {
    auto j = reshape<1, 1, 16>(arange<16>());
    auto x_low = load(x_block + j), x_high = load(x_block + (j + 16));  // [BR, 1, 16]
    auto eights = full<u8, 1, 1, 16>(8);
    auto offset = dot4(eights, x_low) + dot4(eights, x_high);  // [BR, 1, 4]
    return dot4(q & 15, x_low) + dot4(q >> 4, x_high) - offset;
  }
};

// W is [N][K] in P's format, K a multiple of 32; x arrives as activation blocks xq / xd of
// `rows` rows (1 for decode, up to BR per program: program (i, j) takes rows j*BR .. j*BR +
// BR - 1, so a grid of cdiv(rows, BR) along axis 1 covers a prefill). One program per BN weight rows spread N/BN apart
// (spread_rows in common.h), one block of each per step: its quant bytes are read once for
// every row of x, turned into [BR, BN, kGroups] integer sums by dot4, and each block's groups
// are added in i32 (exact) and scaled once by the weight's and the activation's block scales
// into a [BR, BN] f32 accumulator. Why not keep kGroups f32 lanes per row across the loop and
// reduce them once at the end, as llama.cpp's vec_dot keeps vpdpbusd's lanes: on the host LLVM
// unrolls the [BN, kGroups] update and SLP-vectorizes it across rows with long shuffle chains;
// summing each block's groups first gave half the machine code for the Q8_0 decode kernel
// (417 against 878 lines of assembly, AVX-512) and no slower decode. PREFETCH > 0 asks for each
// weight row's bytes that far ahead (matvec.h says why). Rows of x past `rows` and of W past N
// are clamped for loading; stores are masked.
//
// Numerics (kernels/library.h has the contract): the integer sums are exact, each block's
// contribution is one f32 product float(isum) * (d_w * d_x) and the accumulation is in f32, so
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
  auto rj = reshape<1, 1, P::kQuantBytes>(wide(arange<P::kQuantBytes>()));
  auto acc = for_range(0, blocks, 1, zeros<f32, BR, BN>(), [&](auto b, auto acc) {
    auto block = w_block + wide(b);  // [1, BN, 1]
    if constexpr (PREFETCH > 0) prefetch(wq + (block * F::kBlockBytes + PREFETCH));
    auto q = load(wq + (block * F::kBlockBytes + F::kQuantOffset + rj));  // [1, BN, kQuantBytes]
    auto d_w = cast<f32>(load(wd + block * F::kScaleStride));             // [1, BN, 1]
    auto x_block = x_row * wide(blocks) + wide(b);                        // [BR, 1, 1]
    auto d_x = load(xd + x_block);
    auto s = sum<2>(P::sums(q, xq + x_block * F::kBlockElements));  // [BR, BN]: each block's integer dot
    return acc + cast<f32>(s) * reshape<BR, BN>(d_w * d_x);
  });
  auto y = acc;
  if constexpr (HAS_BIAS) y = y + row(load(bias + minimum(rn, N - 1)));
  store(out + col(wide(r) * wide(N)) + row(rn), y, col(r < rows) && row(rn < N));
}

}  // namespace kdsl::kernels
