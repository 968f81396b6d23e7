// matvec_int8_sums.h - decode and few-row products out[r,n] = x[r,:] . W[n,:] (+ bias[n]) by integer dot products, for the formats whose blocks need the activations' group sums (k-quants, Q4_1, Q5_0, Q5_1)
#pragma once
#include <cstddef>
#include <tuple>

#include "kernels/common.h"
#include "kernels/weight_blocks.h"

namespace kdsl::kernels {

// W is [N][K] in the format of policy P (kquant_int_dot.h, decoded_int_dot.h), K a multiple of
// P::kBlockElements; x arrives as activation blocks of `rows` rows (1 for decode, up to BR)
// made by quantize_activations_sums<P::kBlockElements, P::kSumGroup>: quants xq, one f32 scale
// xd per block, the integer sums xs of each group. Program (i, j) takes rows j*BR .. j*BR +
// BR - 1 of x (axis 1 of the grid covers a prefill) and BN weight rows spread N/BN
// apart (spread_rows in common.h), one block of each per step: the policy's block_dot reads
// the block's bytes once for every row of x and returns its sums (BlockSums, below). Why
// lanes carried across the loop rather than one total per block: a k-quant block has 8 or 16
// sub-blocks with scales of their own, and a horizontal sum of dot4's lanes per sub-block (or
// per block, with the scales applied to i32 sums) cost more instructions than the dot products
// themselves; each sub-block's [.., 4] lanes of one (x row, weight row) are one vector that
// converts to f32 and meets its scale in one multiply-add, and the lanes are summed once after
// the loop. PREFETCH > 0 asks for each weight row's bytes that far ahead, PREFETCH_LINES cache
// lines of them (a Q6_K block spans 3.3 lines). Rows of x past `rows` and of W past N are clamped for loading; stores are masked.
//
// Numerics (kernels/library.h has the contract): the integer sums are exact; each sub-block
// adds an f32 product float(isum) * (d * sc) to a lane, each block its lanes times d_x to the
// accumulator. Against the f32 dequantize path the difference is the activations'
// quantization: |y_int8 - y_f32| <= sum over values of (d_x / 2) * |w|, plus f32 rounding.
template <class P, int BR, int BN, bool HAS_BIAS, int PREFETCH = 0, int PREFETCH_LINES = 1>
void matvec_int8_sums(Ptr<const i8> xq, Ptr<const f32> xd, Ptr<const i32> xs, Ptr<const u8> wq, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> rows,
                      Scalar<i32> N, Scalar<i32> K) {
  constexpr int BE = P::kBlockElements, G = BE / P::kSumGroup;
  auto blocks = K / BE;
  auto r = program_id(1) * BR + arange<BR>();  // this program's rows of x
  auto rn = spread_rows<BN>(N);
  auto x_row = reshape<BR, 1, 1>(wide(minimum(r, rows - 1)));
  auto w_block = reshape<1, BN, 1>(wide(minimum(rn, N - 1)) * wide(blocks));  // each weight row's first block
  constexpr int kLanes = StoredBlocks<typename P::Layout, Block<i64, 1, BN, 1>>::kPiece / 4;  // dot4's lanes of a 16-byte piece
  auto [lanes, offsets] = for_range(0, blocks, 1, zeros<f32, BR, BN, kLanes>(), zeros<f32, BR, BN>(), [&](auto b, auto l, auto o) {
    auto block = w_block + wide(b);  // [1, BN, 1]
    if constexpr (PREFETCH > 0)
      prefetch(wq + (block * P::kBlockBytes + PREFETCH + wide(reshape<1, 1, PREFETCH_LINES * 64>(arange<PREFETCH_LINES * 64>()))));
    auto x_block = x_row * wide(blocks) + wide(b);  // [BR, 1, 1]
    auto d_x = load(xd + x_block);                  // [BR, 1, 1]
    auto s = P::template block_dot<BR, BN>(StoredBlocks<typename P::Layout, decltype(block)>{wq, block}, xq + x_block * BE, xs + x_block * G);
    return std::tuple(l + s.lanes * d_x, o + s.offset * reshape<BR, 1>(d_x));
  });
  auto y = sum<2>(lanes) + offsets;
  store_product<HAS_BIAS>(out, bias, y, r, rn, rows, N);
}

// The same product over weights grouped by R rows (formats/row_groups.h; GroupedBlocks,
// weight_blocks.h): program i takes group i, rows iR .. iR + R - 1, and reads each block's
// field of all R rows as one run. W holds cdiv(N, R) groups; rows past N are the last
// group's zero padding, and their outputs are not stored. PREFETCH > 0: each step asks for
// the bytes that far past its group's block (GroupedBlocks::prefetch_ahead), the blocks a
// thread reads a few steps later, its programs' groups lying one after another. Without it a
// decode product's time was its compute's plus its reads' (the hardware prefetcher did not
// run far enough ahead), not the larger of the two (bench/RESULTS.md, 2026-12-07,
// "a prefetch distance for grouped decode").
template <class P, int BR, int R, bool HAS_BIAS, int64_t PREFETCH = 0>
void matvec_grouped_sums(Ptr<const i8> xq, Ptr<const f32> xd, Ptr<const i32> xs, Ptr<const u8> wq, Ptr<const f32> bias, Ptr<f32> out, Scalar<i32> rows,
                         Scalar<i32> N, Scalar<i32> K) {
  constexpr int BE = P::kBlockElements, G = BE / P::kSumGroup;
  auto blocks = K / BE;
  auto r = program_id(1) * BR + arange<BR>();  // this program's rows of x
  auto rn = program_id(0) * R + arange<R>();   // the group's weight rows
  auto x_row = reshape<BR, 1, 1>(wide(minimum(r, rows - 1)));
  auto first_block = wide(program_id(0)) * wide(blocks);  // the group's first block
  static_assert(GroupedBlocks<typename P::Layout, R>::kPiece == 4, "a grouped row's sum is one lane");
  // A row's one lane and its offset meet before d_x, so one accumulator of [BR, R] is carried:
  // carried apart, the two took twice the registers, and LLVM rotated Q4_1's four accumulators
  // through five registers and the stack every step (bench/RESULTS.md, 2026-12-07).
  auto acc = for_range(0, blocks, 1, zeros<f32, BR, R, 1>(), [&](auto b, auto acc) {
    const GroupedBlocks<typename P::Layout, R> w{wq, first_block + wide(b)};
    if constexpr (PREFETCH > 0) w.template prefetch_ahead<PREFETCH>();
    auto x_block = x_row * wide(blocks) + wide(b);  // [BR, 1, 1]
    auto d_x = load(xd + x_block);                  // [BR, 1, 1]
    auto s = P::template block_dot<BR, R>(w, xq + x_block * BE, xs + x_block * G);
    return acc + (s.lanes + reshape<BR, R, 1>(s.offset)) * d_x;
  });
  store_product<HAS_BIAS>(out, bias, reshape<BR, R>(acc), r, rn, rows, N);
}

// What a policy's block_dot returns for one block of each (x row, weight row): the block's
// product is d_x * (sum of lanes + offset). The lanes ([BR, BN, lanes a row]) are dot4's exact
// integer sums, each converted to f32 once and multiplied by its sub-block's weight scale
// (d * sc); the offset ([BR, BN]) is the weights' offsets or minimums times the activations'
// group sums.
template <class Lanes, class Offset>
struct BlockSums {
  Lanes lanes;
  Offset offset;
};

// Each weight row's f16 factor at byte `offset` of its block (counted over the matrix), as f32
// [1, BN]: the policies' d, dmin and m.
template <class Layout, int BN>
Block<f32, 1, BN> block_half_factor(Ptr<const u8> wq, const Block<i64, 1, BN, 1> &block, size_t offset) {
  static_assert(sizeof(Layout) % 2 == 0, "the f16 factors are addressed in halves: the block size must be even");
  auto h = load(reinterpret<f16>(wq) + (block * int(sizeof(Layout) / 2) + int(offset / 2)));  // [1, BN, 1]
  return reshape<1, BN>(cast<f32>(h));
}
// The same for the prefill tiles' blocks ([BN], counted over the matrix): [1, BN].
template <class Layout, int BN>
Block<f32, 1, BN> block_half_factor(Ptr<const u8> wq, const Block<i64, BN> &block, size_t offset) {
  return block_half_factor<Layout>(wq, reshape<1, BN, 1>(block), offset);
}

}  // namespace kdsl::kernels
