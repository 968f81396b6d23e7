// matmul_int_tiles.h - prefill products out[m,n] = x[m,:] . W[n,:] (+ bias[n]) over quantized weights as byte dots: tiles of x's 8-bit quants by each block's quants
#pragma once
#include "kernels/kquant_int_dot.h"

namespace kdsl::kernels {

// W is [N][K] in a format with prefill tiles (int_dot_policy.h's `tiles`: SubBlock32IntDot for
// Q4_K and Q5_K, Q6_KIntDot), K a multiple of P::kBlockElements; x arrives quantized by
// quantize_activations_sums<P::kBlockElements, P::kSumGroup> (ggml's Q8_K for the k-quants):
// quants xq, one f32 scale xd per block, the integer sum of every
// kSumGroup quants xs. One program per BM x BN output tile, one block of BN weight rows per
// step: the policy's tile_dot multiplies x's [BM, block] quants by the block's, a byte dot
// per sub-block (exact in i32) scaled by the sub-block's factors and d_x, the offsets or
// minimums through the group sums, added into the tile's accumulator by fma: for the formats
// of 32-value blocks this step runs every 32 k over the whole [BM, BN] tile, and a multiply
// then an add cost an op more an output each (bench/RESULTS.md, 2026-12-07, "the blocks'
// scaling by fma"). The host lowers the byte dot as register tiles of
// vpmaddubsw summed in i16 (src/codegen/host/int_dot_tile.h), where the f32 tiles
// (matvec_kquant.h's matmul_kquant) decode W to f32 and spend an FMA on every 8 products.
// x's arrays hold whole tiles of rows, cdiv(M, BM) * BM of them (the Library's scratch): the
// rows past M hold finite values, their outputs are masked, so x's rows are read unclamped
// and each row's address steps by one row from the last, where a clamp cost a compare, a
// move and a multiply a row every block. W's rows past N are clamped; stores are masked.
//
// Numerics: as matvec_int8_sums.h's; against the f32 path the difference is the activations'
// quantization.
template <class P, int BM, int BN, bool HAS_BIAS>
void matmul_int_tiles(Ptr<const i8> xq, Ptr<const f32> xd, Ptr<const i32> xs, Ptr<const u8> wq, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> M,
                      Scalar<i32> N, Scalar<i32> K) {
  constexpr int kBlock = P::kBlockElements, kGroups = kBlock / P::kSumGroup;
  auto blocks = K / kBlock;
  // This program's rows, in i64 from the start: a row widened from i32 after its add kept LLVM
  // from stepping x's row addresses by one row each.
  auto rm = wide(program_id(0)) * BM + wide(arange<BM>());
  auto rn = program_id(1) * BN + arange<BN>();
  auto x_row = col(rm);  // [BM, 1]: whole tiles of rows (above)
  auto w_first = wide(minimum(rn, N - 1)) * wide(blocks);  // [BN]: each weight row's first block
  auto acc = for_range(0, blocks, 1, zeros<f32, BM, BN>(), [&](auto b, auto acc) {
    auto x_block = x_row * wide(blocks) + wide(b);  // [BM, 1]
    auto x_quants = xq + x_block * kBlock;          // this block's quants
    auto x_sums = xs + x_block * kGroups;
    return P::template tile_dot<BM, BN>(wq, w_first + wide(b), x_quants, x_sums, xd + x_block, acc);
  });
  if constexpr (HAS_BIAS) acc = acc + row(load(bias + minimum(rn, N - 1)));
  store(out + col(rm * wide(N)) + row(rn), acc, col(rm < wide(M)) && row(rn < N));
}

}  // namespace kdsl::kernels
