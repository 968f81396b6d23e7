// matvec_kquant.h - products out[r,n] = x[r,:] . W[n,:] (+ bias[n]) and embedding rows over Q6_K / Q4_K weights read in place
#pragma once
#include "kernels/kquant_formats.h"

namespace kdsl::kernels {

// W is [N][K] in k-quant format F (kquant_formats.h), K a multiple of 256: row n is blocks
// n * K/256 .. (n + 1) * K/256 - 1.

// Decode (one row of x), the hot path. One program per BN output rows spread N/BN apart
// (spread_rows in common.h), one super-block of each row per step: F::load_block reads its bytes
// and scales once, then each of its 8 parts is decoded to a [BN, 32] f32 tile (shaped
// F::Part) and its products with the matching 32 values of x are added lane by lane into
// one accumulator of that shape, summed once after the loop (as matvec_quantized.h does, for the same
// reasons). PREFETCH > 0 asks for each row's bytes that far ahead, PREFETCH_LINES cache
// lines of them: a step reads 3.3 (Q6_K) or 2.3 (Q4_K) lines of each row, so one line per
// step would fall behind. Rows past N are clamped (loads stay in bounds, stores are masked).
template <class F, int BN, bool HAS_BIAS, int PREFETCH = 0, int PREFETCH_LINES = 4>
void matvec_kquant(Ptr<const f32> x, Ptr<const u8> wq, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> N, Scalar<i32> K) {
  constexpr int PE = F::kPartElements;
  auto blocks = K / F::kBlockElements;  // per row
  auto rn = spread_rows<BN>(N);
  auto row_block = col(wide(minimum(rn, N - 1)) * wide(blocks));  // [BN, 1] first block of each row
  auto lanes = F::lanes();
  auto acc = for_range(0, blocks, 1, F::template part_zeros<BN>(), [&](auto b, auto acc) {
    auto block = row_block + wide(b);  // [BN, 1]
    if constexpr (PREFETCH > 0) prefetch(wq + (block * F::kBlockBytes + PREFETCH + row(wide(arange<PREFETCH_LINES * 64>()))));
    auto l = F::template load_block<BN>(wq, block);
    for (int p = 0; p < F::kParts; ++p) {
      auto xs = load(x + (b * F::kBlockElements + p * PE + lanes));  // [1, PE] or [1, 2, 16]
      acc = acc + F::part(l, p) * xs;
    }
    return acc;
  });
  auto y = sum<1>(reshape<BN, PE>(acc));
  if constexpr (HAS_BIAS) y = y + load(bias + minimum(rn, N - 1));
  store(out + rn, y, rn < N);
}

// Several rows of x (prefill, small batches): one program per BM x BN output tile, one
// super-block of BN rows of W per step, decoded once per part into a [BN, 32] f32 tile that
// meets the matching [BM, 32] columns of x in one dot. A straightforward path, correct at any
// size but not tuned as matmul_quantized.h is: each step's dots are only 32 deep. The
// `where` (true for every column) makes the transposed tile a block of its own, as in
// matmul.h. Rows and columns past M and N are clamped for loading, stores are masked.
template <class F, int BM, int BN, bool HAS_BIAS>
void matmul_kquant(Ptr<const f32> x, Ptr<const u8> wq, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K) {
  constexpr int PE = F::kPartElements;
  auto blocks = K / F::kBlockElements;
  auto rm = program_id(0) * BM + arange<BM>();
  auto rn = program_id(1) * BN + arange<BN>();
  auto x_rows = col(wide(minimum(rm, M - 1)) * wide(K));          // [BM, 1]
  auto row_block = col(wide(minimum(rn, N - 1)) * wide(blocks));  // [BN, 1]
  auto rj = arange<PE>();
  auto acc = for_range(0, blocks, 1, zeros<f32, BM, BN>(), [&](auto b, auto acc) {
    auto l = F::template load_block<BN>(wq, row_block + wide(b));
    auto ok = col(b * F::kBlockElements + rj < K);  // [PE, 1], always true
    for (int p = 0; p < F::kParts; ++p) {
      auto a = load(x + (x_rows + row(wide(b * F::kBlockElements + p * PE + rj))));  // [BM, PE]
      acc = dot(a, where(ok, trans(reshape<BN, PE>(F::part(l, p))), 0.0f), acc);
    }
    return acc;
  });
  if constexpr (HAS_BIAS) acc = acc + row(load(bias + minimum(rn, N - 1)));
  store(out + col(wide(rm) * wide(N)) + row(rn), acc, col(rm < M) && row(rn < N));
}

// Token embedding rows from a [vocab][dim] table in format F, dim a multiple of 256.
// Program (r, j) dequantizes blocks j*BB .. j*BB + BB - 1 of table row ids[r] into out row
// r; blocks past the row are clamped for loading and not stored.
template <class F, int BB>
void embedding_kquant(Ptr<const i32> ids, Ptr<const u8> tq, Ptr<f32> out, Scalar<i32> dim) {
  constexpr int PE = F::kPartElements;
  auto blocks = dim / F::kBlockElements;
  auto r = program_id(0);
  auto blk = program_id(1) * BB + arange<BB>();  // [BB] block within the row
  auto ok = col(blk < blocks);                   // [BB, 1]
  auto block = col(wide(load(ids + r)) * wide(blocks) + wide(minimum(blk, blocks - 1)));  // [BB, 1] block within the table
  auto l = F::template load_block<BB>(tq, block);
  auto dst = out + (wide(r) * wide(dim) + wide(col(blk * F::kBlockElements) + row(arange<PE>())));  // [BB, PE]
  for (int p = 0; p < F::kParts; ++p) store(dst + p * PE, reshape<BB, PE>(F::part(l, p)), ok);
}

}  // namespace kdsl::kernels
