// matvec_quantized.h - decode and few-row products out[r,n] = x[r,:] . W[n,:] (+ bias[n]) over Q8_0 / Q4_0 weights read in place
#pragma once
#include "kernels/quant_formats.h"

namespace kdsl::kernels {

// W is [N][K] in format F (quant_formats.h), K a multiple of 32: row n is blocks
// n * K/32 .. (n + 1) * K/32 - 1. One program per BN output rows; each step reads BB whole
// blocks of each of its rows as a [BN, BB, kPartBytes] tile of quant bytes and a [BN, BB]
// tile of scales, and adds q * x * d elementwise into a [BN, BB, kPartBytes] f32
// accumulator, reduced once after the loop. Why not sum each block's 32 products and scale
// the sum (one multiply per block): on the host backend LLVM fully unrolls a 32-long reduction
// and vectorizes across blocks instead, 34 bytes apart, so every quant byte is inserted into
// its vector one at a time; the elementwise update keeps the 32 contiguous bytes in one
// vector load, and one more multiply per element costs nothing in a memory-bound kernel.
// Rows past N are clamped (loads stay in bounds, stores are masked); blocks past the last
// whole BB group are one masked step.
template <class F, int BN, int BB, bool HAS_BIAS>
void matvec_quantized(Ptr<f32> x, Ptr<typename F::Quant> wq, Ptr<f16> wd, Ptr<f32> bias, Ptr<f32> out, Scalar<i32> N, Scalar<i32> K) {
  constexpr int PB = F::kPartBytes;
  auto blocks = K / F::kBlockElements;  // per row
  auto rn = program_id(0) * BN + arange<BN>();
  auto row_block = col(wide(minimum(rn, N - 1)) * wide(blocks));  // [BN, 1] first block of each row
  auto rb = arange<BB>();
  auto rj = reshape<1, 1, PB>(arange<PB>());
  auto step = [&](auto acc, auto b0, bool masked) {
    auto blk = b0 + rb;                       // [BB] block within the row
    auto block = row_block + row(wide(blk));  // [BN, BB] block within W
    auto ok = row(blk < blocks);              // [1, BB]
    auto ok3 = expand_dims<2>(ok);            // [1, BB, 1]
    auto q_ptr = wq + (expand_dims<2>(block * F::kBlockBytes + F::kQuantOffset) + wide(rj));  // [BN, BB, PB]
    auto d_ptr = wd + block * F::kScaleStride;                                            // [BN, BB]
    auto x_ptr = x + (expand_dims<2>(row(blk * F::kBlockElements)) + rj);                // [1, BB, PB]
    auto q = masked ? load(q_ptr, ok3, 0) : load(q_ptr);
    auto d = expand_dims<2>(cast<f32>(masked ? load(d_ptr, ok, 0) : load(d_ptr)));
    for (int p = 0; p < F::kParts; ++p) {
      auto xs = masked ? load(x_ptr + p * PB, ok3, 0) : load(x_ptr + p * PB);
      acc = acc + F::part(q, p) * xs * d;
    }
    return acc;
  };
  auto b_main = blocks - blocks % BB;
  auto acc = for_range(0, b_main, BB, zeros<f32, BN, BB, PB>(), [&](auto b, auto acc) { return step(acc, b, false); });
  acc = if_(
      b_main < blocks, [&] { return step(acc, b_main, true); }, [&] { return acc; });
  auto y = sum<1>(sum<2>(acc));
  if constexpr (HAS_BIAS) y = y + load(bias + minimum(rn, N - 1));
  store(out + rn, y, rn < N);
}

// The same for up to BR rows of x at once (small batches): each step's weight tile is read
// once and used for every row, as in matvec_rows.h, into a [BR, BN, BB, kPartBytes]
// accumulator (kept small by a small BB) reduced after the loop.
template <class F, int BR, int BN, int BB, bool HAS_BIAS>
void matvec_rows_quantized(Ptr<f32> x, Ptr<typename F::Quant> wq, Ptr<f16> wd, Ptr<f32> bias, Ptr<f32> out, Scalar<i32> rows, Scalar<i32> N,
                           Scalar<i32> K) {
  constexpr int PB = F::kPartBytes;
  auto blocks = K / F::kBlockElements;
  auto r = arange<BR>();
  auto rn = program_id(0) * BN + arange<BN>();
  auto x_rows = reshape<BR, 1, 1, 1>(wide(minimum(r, rows - 1)) * wide(K));  // [BR, 1, 1, 1]
  auto row_block = col(wide(minimum(rn, N - 1)) * wide(blocks));              // [BN, 1]
  auto rb = arange<BB>();
  auto rj = reshape<1, 1, PB>(arange<PB>());
  auto step = [&](auto acc, auto b0, bool masked) {
    auto blk = b0 + rb;
    auto block = row_block + row(wide(blk));  // [BN, BB]
    auto ok = row(blk < blocks);              // [1, BB]
    auto ok3 = expand_dims<2>(ok);            // [1, BB, 1]
    auto q_ptr = wq + (expand_dims<2>(block * F::kBlockBytes + F::kQuantOffset) + wide(rj));  // [BN, BB, PB]
    auto d_ptr = wd + block * F::kScaleStride;
    // [BR, 1, BB, PB]: element j of part p of block blk, for every row of x
    auto x_ptr = x + (x_rows + expand_dims<0>(wide(expand_dims<2>(row(blk * F::kBlockElements)) + rj)));
    auto q = masked ? load(q_ptr, ok3, 0) : load(q_ptr);
    auto d = expand_dims<2>(cast<f32>(masked ? load(d_ptr, ok, 0) : load(d_ptr)));  // [BN, BB, 1]
    for (int p = 0; p < F::kParts; ++p) {
      auto xs = masked ? load(x_ptr + p * PB, expand_dims<0>(ok3), 0) : load(x_ptr + p * PB);
      acc = acc + xs * expand_dims<0>(F::part(q, p)) * expand_dims<0>(d);
    }
    return acc;
  };
  auto b_main = blocks - blocks % BB;
  auto acc = for_range(0, b_main, BB, zeros<f32, BR, BN, BB, PB>(), [&](auto b, auto acc) { return step(acc, b, false); });
  acc = if_(
      b_main < blocks, [&] { return step(acc, b_main, true); }, [&] { return acc; });
  auto y = sum<2>(sum<3>(acc));  // [BR, BN]
  if constexpr (HAS_BIAS) y = y + row(load(bias + minimum(rn, N - 1)));
  store(out + col(wide(r) * wide(N)) + row(rn), y, col(r < rows) && row(rn < N));
}

}  // namespace kdsl::kernels
