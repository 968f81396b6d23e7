// matmul_quantized.h - batched (prefill) product out[m,n] = x[m,:] . W[n,:] (+ bias[n]) with dot over tiles of Q8_0 / Q4_0 weights
#pragma once
#include "kernels/quant_formats.h"

namespace kdsl::kernels {

// One program per BM x BN output tile, as matmul.h, with W [N][K] in format F read in
// place. Each step covers BB whole blocks (BB * 32 columns): it loads the [BN, BB] scales
// and [BN, BB, kPartBytes] quant bytes once, and for each part p dequantizes them into a
// [BN, BB * kPartBytes] f32 tile (scale applied per block) that meets the matching columns
// of x, [BM, BB * kPartBytes], in one dot. The parts' columns interleave (Q4_0: 0..15 and
// 16..31 of each block), which is why x is gathered per part rather than W reordered. The
// W tile is dequantized once per step for all BM rows; the `where` makes its transpose a
// block of its own, as in matmul.h. Rows and columns past M and N are clamped for loading;
// blocks past the last whole BB group are one masked step (masked blocks read as zeros).
template <class F, int BM, int BN, int BB, bool HAS_BIAS>
void matmul_quantized(Ptr<const f32> x, Ptr<const typename F::Quant> wq, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> M, Scalar<i32> N,
                      Scalar<i32> K) {
  constexpr int PB = F::kPartBytes;
  auto blocks = K / F::kBlockElements;
  auto rm = program_id(0) * BM + arange<BM>();
  auto rn = program_id(1) * BN + arange<BN>();
  auto x_rows = reshape<BM, 1, 1>(wide(minimum(rm, M - 1)) * wide(K));  // [BM, 1, 1]
  auto row_block = col(wide(minimum(rn, N - 1)) * wide(blocks));        // [BN, 1]
  auto rb = arange<BB>();
  auto rj = reshape<1, 1, PB>(arange<PB>());
  auto step = [&](auto acc, auto b0, bool masked) {
    auto blk = b0 + rb;
    auto block = row_block + row(wide(blk));  // [BN, BB]
    auto ok = row(blk < blocks);              // [1, BB]
    auto ok3 = expand_dims<2>(ok);            // [1, BB, 1]
    auto ok_k = reshape<BB * PB, 1>(broadcast_to<BB, PB>(trans(ok)));  // [BB * PB, 1] per column of the W tile
    auto x_ptr = x + (x_rows + wide(expand_dims<2>(row(blk * F::kBlockElements)) + rj));  // [BM, BB, PB]
    auto g = load_block_group<F>(wq, block, ok, masked);                              // [BN, BB, PB], [BN, BB, 1]
    for (int p = 0; p < F::kParts; ++p) {
      auto a = reshape<BM, BB * PB>(masked ? load(x_ptr + p * PB, ok3, 0) : load(x_ptr + p * PB));
      auto w = reshape<BN, BB * PB>(F::part(g.quants, p) * g.scales);
      acc = dot(a, where(ok_k, trans(w), 0.0f), acc);
    }
    return acc;
  };
  auto b_main = blocks - blocks % BB;
  auto acc = for_range(0, b_main, BB, zeros<f32, BM, BN>(), [&](auto b, auto acc) { return step(acc, b, false); });
  acc = if_(
      b_main < blocks, [&] { return step(acc, b_main, true); }, [&] { return acc; });
  if constexpr (HAS_BIAS) acc = acc + row(load(bias + minimum(rn, N - 1)));
  store(out + col(wide(rm) * wide(N)) + row(rn), acc, col(rm < M) && row(rn < N));
}

}  // namespace kdsl::kernels
