// quantize_activations.h - f32 rows to 8-bit activation blocks with integer group sums (ggml's Q8_K and Q8_1), the activation side of the integer-dot kernels
#pragma once
#include "kernels/common.h"
#include "kernels/swiglu.h"

namespace kdsl::kernels {

// Quants these kernels wrote, with the floor they keep them above said to the compiler: a
// max that changes nothing, and lets the host's s8 x s8 byte dots without VNNI move x's sign
// onto the other operand and take that one's magnitude, which needs x within +-127
// (src/codegen/host/int_dot.h, int_dot_tile.h: SignedMaddubs).
template <int... D>
Block<i8, D...> quants_within_127(const Block<i8, D...> &quants) {
  return maximum(quants, full<i8, D...>(-127));
}

// Block `block` (its index over all rows) of values v, laid [1, G, GROUP] as columns_in_block,
// quantized as quantize_activations_sums says: quants, scale and group sums.
template <int BLOCK, int GROUP, class V, class BlockIndex, class Columns>
void store_quantized_block(const V &v, const BlockIndex &block, const Columns &at, Ptr<i8> xq, Ptr<f32> xd, Ptr<i32> xs) {
  constexpr int G = BLOCK / GROUP;
  auto amax = max<1>(max<2>(abs(v)));  // [1]
  auto inverse = where(amax > 0.0f, 127.0f / amax, 0.0f);
  auto q = floor(v * reshape<1, 1, 1>(inverse) + 0.5f);  // integers in [-127, 127], exact in f32
  store(xq + at, cast<i8>(q));
  store(xd + block + wide(arange<1>()), amax / 127.0f);
  store(xs + (block * G + wide(row(arange<G>()))), cast<i32>(sum<2>(q)));  // [1, G]
}

// [1, G, GROUP]: each value's column in its block, in i64 and affine in each axis, so that the
// host lowering sees each group's addresses as consecutive. Computed in i32 from a reshaped
// arange<BLOCK>, the column met the row's start only after its widening, and the loads and
// stores went element by element.
template <int BLOCK, int GROUP>
auto columns_in_block() {
  constexpr int G = BLOCK / GROUP;
  return reshape<1, G, 1>(wide(arange<G>())) * GROUP + reshape<1, 1, GROUP>(wide(arange<GROUP>()));
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
// K is a multiple of BLOCK.
//
// Grid (rows): program r takes row r, one whole block a step of a run-time loop, so nothing is
// masked (masked, AVX2 stores each byte with a compare and a branch: bench/RESULTS.md,
// 2026-12-06, "activations quantized unmasked"). A decode row is one program, which the CPU
// backend runs on the calling thread; it measured as fast as a program a block spread over two
// threads (bench/RESULTS.md, 2026-12-07): its time there goes to reading x, which the other
// thread wrote.
template <int BLOCK, int GROUP>
void quantize_activations_sums(Ptr<const f32> x, Ptr<i8> xq, Ptr<f32> xd, Ptr<i32> xs, Scalar<i32> K) {
  static_assert(BLOCK % GROUP == 0 && GROUP % 4 == 0, "quantize_activations_sums: GROUP must divide BLOCK");
  auto blocks = K / BLOCK;
  auto r = wide(program_id(0));
  auto in_block = columns_in_block<BLOCK, GROUP>();
  for_range(0, blocks, 1, [&](auto b) {
    auto block = r * wide(blocks) + wide(b);  // the block's index over all rows
    auto at = block * BLOCK + in_block;
    store_quantized_block<BLOCK, GROUP>(load(x + at), block, at, xq, xd, xs);
  });
}

// What a product's rows are made from when the step before it runs in its quantizer's launch
// (Library::matmul_normed, Library::matmul_swiglu): the CPU's decode then makes one launch
// where it made two, and reads the rows where they were just written instead of a copy.
enum class MadeRows {
  RmsNorm,     // rmsnorm(x) * w, as rmsnorm.h computes it
  AddRmsNorm,  // x += other (written back), then rmsnorm(x) * w
  Swiglu,      // silu(x) * other, x the gate and other the up product (swiglu.h)
};

// quantize_activations_sums over rows the step S makes (above), one program a row of K values.
// The norms take two passes over the row: its sum of squares (x updated on the way for
// AddRmsNorm), then the normed blocks; the row is K * 4 bytes, in the core's cache for the
// second. norm_w is unread by Swiglu.
template <int BLOCK, int GROUP, MadeRows S>
void quantize_made_rows(std::conditional_t<S == MadeRows::AddRmsNorm, Ptr<f32>, Ptr<const f32>> x, Ptr<const f32> other, Ptr<const f32> norm_w,
                        Ptr<i8> xq, Ptr<f32> xd, Ptr<i32> xs, Scalar<i32> K, Scalar<f32> eps) {
  static_assert(BLOCK % GROUP == 0 && GROUP % 4 == 0, "quantize_made_rows: GROUP must divide BLOCK");
  constexpr int G = BLOCK / GROUP;
  auto blocks = K / BLOCK;
  auto first = wide(program_id(0)) * wide(blocks);  // the row's first block over all rows
  auto in_block = columns_in_block<BLOCK, GROUP>();
  if constexpr (S == MadeRows::Swiglu) {
    for_range(0, blocks, 1, [&](auto b) {
      auto block = first + wide(b);
      auto at = block * BLOCK + in_block;
      store_quantized_block<BLOCK, GROUP>(silu_times(load(x + at), load(other + at)), block, at, xq, xd, xs);
    });
  } else {
    auto squares = for_range(0, blocks, 1, zeros<f32, 1, G, GROUP>(), [&](auto b, auto squares) {
      auto at = (first + wide(b)) * BLOCK + in_block;
      auto v = load(x + at);
      if constexpr (S == MadeRows::AddRmsNorm) {
        v = v + load(other + at);
        store(x + at, v);
      }
      return squares + v * v;
    });
    auto inv_rms = rsqrt(sum(squares) / cast<f32>(K) + eps);
    for_range(0, blocks, 1, [&](auto b) {
      auto block = first + wide(b);
      auto at = block * BLOCK + in_block;
      auto normed = load(x + at) * inv_rms * load(norm_w + (wide(b) * BLOCK + in_block));
      store_quantized_block<BLOCK, GROUP>(normed, block, at, xq, xd, xs);
    });
  }
}

}  // namespace kdsl::kernels
