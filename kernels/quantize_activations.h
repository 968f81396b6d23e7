// quantize_activations.h - f32 rows to 8-bit activation blocks (Q8_0-style; Q8_K- and Q8_1-style with integer group sums), the activation side of the integer-dot kernels
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// A program of BB blocks masks the blocks past the row's end. One block a program (BB 1, as
// the Library launches them) never passes it: the grid has one program a block. Unmasked, its
// int8 quants store as vectors; masked, each byte's store was a compare and a branch (AVX2 has
// no masked byte store), and a 512-row prefill spent 8.5% of its time quantizing
// (bench/RESULTS.md, 2026-12-06, "activations quantized unmasked").
template <int BB, class P, class M>
auto load_in_row(const P &ptrs, const M &mask) {
  if constexpr (BB == 1) return load(ptrs);
  else return load(ptrs, mask, 0.0f);
}
template <int BB, class P, class V, class M>
void store_in_row(const P &ptrs, const V &values, const M &mask) {
  if constexpr (BB == 1) store(ptrs, values);
  else store(ptrs, values, mask);
}

// Quants these kernels wrote, with the floor they keep them above said to the compiler: a
// max that changes nothing, and lets the host's s8 x s8 byte dots without VNNI move x's sign
// onto the other operand and take that one's magnitude, which needs x within +-127
// (src/codegen/host/int_dot.h, int_dot_tile.h: SignedMaddubs).
template <int... D>
Block<i8, D...> quants_within_127(const Block<i8, D...> &quants) {
  return maximum(quants, full<i8, D...>(-127));
}

// The activation blocks the integer-dot kernels read: BLOCK values of a row per f32 scale, as
// ggml's quantize_row_q8_0 makes its 32 (d = amax / 127, q = round(x * 127 / amax), a block
// of zeros where amax is 0), plus the integer sum of every GROUP consecutive quants. Two
// differences from ggml, both for precision: the scale stays f32 (ggml rounds it to f16), and
// ties round half up (floor(v + 0.5), exact here: |v| <= 127); so |x - d * q| <= d / 2 (plus
// f32 rounding of x * 127 / amax), and q is never -128: every value lies in [-127, 127].
// The sums serve the formats whose weights carry an offset or a minimum (the k-quants' dmin *
// m and Q6_K's -32, Q4_0's -8, Q5_0's -16, Q4_1's and Q5_1's m): an offset o shared by a group
// meets the activations once, o * d_x * (sum of the group's quants), instead of once per value.
// BLOCK 256 with GROUP 16 is ggml's Q8_K (the k-quants: Q6_K's scales cover 16 values, Q4_K's
// and Q5_K's 32 = two groups), BLOCK 32 with GROUP 32 its Q8_1 (every 32-value format; Q8_0's
// and IQ4_NL's kernels leave the sums unread); the sums stay i32 (ggml keeps Q8_1's as d * sum
// in f16), so the offset term is exact until it is scaled. Row r's block b
// is xq[r*K + BLOCK*b ..] and xd[r*K/BLOCK + b], its groups xs[r*K/GROUP + (BLOCK/GROUP)*b ..].
// K is a multiple of BLOCK. Grid (cdiv(K/BLOCK, BB), rows): BB blocks of one row per program.
template <int BLOCK, int GROUP, int BB>
void quantize_activations_sums(Ptr<const f32> x, Ptr<i8> xq, Ptr<f32> xd, Ptr<i32> xs, Scalar<i32> K) {
  static_assert(BLOCK % GROUP == 0 && GROUP % 4 == 0, "quantize_activations_sums: GROUP must divide BLOCK");
  constexpr int G = BLOCK / GROUP;
  auto blocks = K / BLOCK;
  auto rb = program_id(0) * BB + arange<BB>();  // this program's blocks of the row
  auto row_start = wide(program_id(1)) * wide(K);
  // [BB, G, GROUP]: each value's column, in i64 and affine in each axis, so that the host
  // lowering sees each group's 16 addresses as consecutive. Computed in i32 from a reshaped
  // arange<BLOCK>, the column met the row's start only after its widening, and the loads and
  // stores went element by element.
  auto at = reshape<BB, 1, 1>(wide(rb)) * BLOCK + reshape<1, G, 1>(wide(arange<G>())) * GROUP + reshape<1, 1, GROUP>(wide(arange<GROUP>()));
  auto in_row = at < wide(K);  // whole blocks past the row's end are masked (load_in_row above)
  auto v = load_in_row<BB>(x + (row_start + at), in_row);
  auto amax = max<1>(max<2>(abs(v)));  // [BB]
  auto inverse = where(amax > 0.0f, 127.0f / amax, 0.0f);
  auto q = floor(v * reshape<BB, 1, 1>(inverse) + 0.5f);  // integers in [-127, 127], exact in f32
  store_in_row<BB>(xq + (row_start + at), cast<i8>(q), in_row);
  store_in_row<BB>(xd + wide(program_id(1)) * wide(blocks) + wide(rb), amax / 127.0f, rb < blocks);
  auto group = col(rb) * G + row(arange<G>());  // [BB, G]: each group's index within the row
  store_in_row<BB>(xs + (wide(program_id(1)) * wide(K / GROUP) + wide(group)), cast<i32>(sum<2>(q)), group < K / GROUP);
}

}  // namespace kdsl::kernels
