// matvec_quantized.h - decode and few-row products out[r,n] = x[r,:] . W[n,:] (+ bias[n]) over Q8_0 / Q4_0 weights read in place
#pragma once
#include "kernels/quant_formats.h"

namespace kdsl::kernels {

// W is [N][K] in format F (quant_formats.h), K a multiple of 32: row n is blocks
// n * K/32 .. (n + 1) * K/32 - 1. One program per BN output rows, spread N/BN apart
// (spread_rows in common.h), one block of each row per step: a [BN, kPartBytes] tile of quant
// bytes (32 contiguous bytes for Q8_0, 16 for Q4_0) and the [BN, 1] scales. Every part's products q * x * d are added lane by lane into one
// [BN, kPartBytes] f32 accumulator; its lanes are summed once, after the loop (the result
// only needs each row's total, so the lanes may mix parts and blocks). Why this shape, on the
// host backend: a per-block sum of 32 products would cost a horizontal reduction every 32
// weights (LLVM also unrolls it and assembles vectors across blocks, 34 bytes apart, byte by
// byte), and a wide [BN, BB, 32] accumulator costs a load and a store per weight; the
// accumulator here is 1 KiB and each step's loads are whole contiguous runs. PREFETCH > 0
// asks for each row's bytes that far ahead (matvec.h says why). Q8_0 decode products went
// from about 4.8 to 9-12 GB/s with it on the 2-core development VM (kdsl-bench-engine), and
// to 16-23 GB/s with the rows spread (Q4_0 from 5-7 to 8-9 GB/s: it is bound by unpacking).
// Rows past N are clamped (loads stay in bounds, stores are masked).
template <class F, int BN, bool HAS_BIAS, int PREFETCH = 0>
void matvec_quantized(Ptr<const f32> x, Ptr<const typename F::Quant> wq, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> N, Scalar<i32> K) {
  constexpr int PB = F::kPartBytes;
  auto wd = reinterpret<f16>(wq);  // the scales, at half index block * kScaleStride
  auto blocks = K / F::kBlockElements;  // per row
  auto rn = spread_rows<BN>(N);
  auto row_block = col(wide(minimum(rn, N - 1)) * wide(blocks));  // [BN, 1] first block of each row
  auto rj = arange<PB>();
  auto acc = for_range(0, blocks, 1, zeros<f32, BN, PB>(), [&](auto b, auto acc) {
    auto block = row_block + wide(b);  // [BN, 1]
    if constexpr (PREFETCH > 0) prefetch(wq + (block * F::kBlockBytes + PREFETCH));
    auto q = load(wq + (block * F::kBlockBytes + F::kQuantOffset + row(wide(rj))));  // [BN, PB]
    auto d = cast<f32>(load(wd + block * F::kScaleStride));                          // [BN, 1]
    for (int p = 0; p < F::kParts; ++p) {
      auto xs = load(x + row(b * F::kBlockElements + p * PB + rj));  // [1, PB]
      acc = acc + F::part(q, p) * (xs * d);  // x * d first: the sum is then one FMA per weight
    }
    return acc;
  });
  auto y = sum<1>(acc);
  if constexpr (HAS_BIAS) y = y + load(bias + minimum(rn, N - 1));
  store(out + rn, y, rn < N);
}

// The same for up to BR rows of x at once (small batches): each step's weight tile is read
// once and used for every row, as in matvec_rows.h, into a [BR, BN, BB, kPartBytes]
// accumulator (kept small by a small BB) reduced after the loop.
template <class F, int BR, int BN, int BB, bool HAS_BIAS>
void matvec_rows_quantized(Ptr<const f32> x, Ptr<const typename F::Quant> wq, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> rows, Scalar<i32> N,
                           Scalar<i32> K) {
  constexpr int PB = F::kPartBytes;
  auto blocks = K / F::kBlockElements;
  auto r = arange<BR>();
  auto rn = spread_rows<BN>(N);
  auto x_rows = reshape<BR, 1, 1, 1>(wide(minimum(r, rows - 1)) * wide(K));  // [BR, 1, 1, 1]
  auto row_block = col(wide(minimum(rn, N - 1)) * wide(blocks));              // [BN, 1]
  auto rb = arange<BB>();
  auto rj = reshape<1, 1, PB>(arange<PB>());
  auto step = [&](auto acc, auto b0, bool masked) {
    auto blk = b0 + rb;
    auto block = row_block + row(wide(blk));  // [BN, BB]
    auto ok = row(blk < blocks);              // [1, BB]
    auto ok3 = expand_dims<2>(ok);            // [1, BB, 1]
    // [BR, 1, BB, PB]: element j of part p of block blk, for every row of x
    auto x_ptr = x + (x_rows + expand_dims<0>(wide(expand_dims<2>(row(blk * F::kBlockElements)) + rj)));
    auto g = load_block_group<F>(wq, block, ok, masked);  // [BN, BB, PB], [BN, BB, 1]
    for (int p = 0; p < F::kParts; ++p) {
      auto xs = masked ? load(x_ptr + p * PB, expand_dims<0>(ok3), 0) : load(x_ptr + p * PB);
      acc = acc + xs * expand_dims<0>(F::part(g.quants, p)) * expand_dims<0>(g.scales);
    }
    return acc;
  };
  auto b_main = blocks - blocks % BB;
  auto acc = for_range(0, b_main, BB, zeros<f32, BR, BN, BB, PB>(), [&](auto b, auto acc) { return step(acc, b, false); });
  acc = if_(
      b_main < blocks, [&] { return step(acc, b_main, true); }, [&] { return acc; });
  auto y = sum<2>(sum<3>(acc));  // [BR, BN]
  store_product<HAS_BIAS>(out, bias, y, r, rn, rows, N);
}

}  // namespace kdsl::kernels
