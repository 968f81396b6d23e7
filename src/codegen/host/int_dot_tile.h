// int_dot_tile.h - the host's integer dot C[M,N] += A[M,K] . B[K,N] on bytes, as register tiles of vpdpbusd or of vpmaddubsw summed in i16
#pragma once
#include <cstdint>
#include <optional>

#include "codegen/codegen.h"
#include "codegen/host/byte_kind.h"
#include "codegen/host/dot_tile.h"

namespace llvm {
class IRBuilderBase;
class Module;
class Value;
}  // namespace llvm

namespace kdsl::codegen {

// How a byte dot becomes vector code. Each k-quad (4 consecutive k) multiplies one vector of
// B, 8 columns by their 4 bytes (B packed as [K/4][N][4], each column's 4 bytes one i32), by
// row m's 4 bytes of A broadcast to every column: 32 products into 8 columns.
//   Vnni:    vpdpbusd adds them into i32 accumulators (one operand as u8, the other as s8).
//   Maddubs: vpmaddubsw makes i16 pair sums, added in i16 (vpaddw) for `group_quads` quads
//            and widened once by vpmaddwd by ones, as llama.cpp's AVX2 kernels do. Exact:
//            group_quads is as many quads as the operands' proved bounds let i16 hold (a
//            4-bit operand against s8: 8 quads, 32 k), and no pair can saturate (the u8 side
//            is below 128). One multiply-port instruction per 32 products where dot4's
//            vpmaddubsw + vpmaddwd by ones take two, and an f32 dot's FMAs take four.
//   SignedMaddubs: s8 x s8 without VNNI (Q8_0's and IQ4_NL's weights against x), where one
//            operand is within +-127: vpmaddubsw of the other's magnitude (vpabsb, u8: 128 for
//            -128) by the first with the other's sign moved onto it (vpsignb; negating stays in
//            s8), widened at once by vpmaddwd by ones into i32 accumulators, since one pair
//            sum (up to 2 * 128 * 127) leaves no room in i16 for a second. The magnitude is
//            taken of B where A is within +-127 (once a quad for each vector of B, shared by
//            the tile's rows), else of A (once a quad for each row).
struct IntDotTilePlan {
  enum class Kind { Vnni, Maddubs, SignedMaddubs } kind = Kind::Maddubs;
  bool b_is_u8 = true;   // B is the instruction's u8 operand (A the s8 one); else the reverse
  bool magnitude_of_b = true;  // SignedMaddubs: |B| by A signed as B; else |A| by B signed as A
  // Vnni with both operands s8 (Q8_0's and IQ4_NL's weights against x): B goes in as B + 128
  // (its sign bit flipped: u8), and C takes 128 times each row of A's sum off after,
  // A . B = A . (B + 128) - 128 * sum(A); the caller packs and corrects (lower_host.cpp).
  bool flip_b = false;
  int64_t group_quads = 1;  // Maddubs: quads summed in i16 before widening
  DotTile tile;          // rows of C by vectors of 8 columns
};

// The plan for these operands on the host, or nullopt where no fast path takes them exactly
// (u8 above 127 against s8, or s8 x s8 with both reaching -128, without VNNI; a CPU without
// AVX2 or a forced portable path): the caller then multiplies element by element.
std::optional<IntDotTilePlan> plan_int_dot_tile(int64_t M, int64_t N, int64_t K, ByteKind a, ByteKind b, IntDotPath path);

// The operands in memory. A: M rows of `a_stride` bytes (at least K rounded up to 4, the bytes
// past K zero or multiplied by B's zeros). B packed: ceil(K/4) rows of padded_columns(N) i32,
// each column's 4 bytes of that quad (zero past K and past N). C: M rows of N i32; with
// `c_is_zero` its contents are ignored and overwritten.
struct IntDotOperands {
  llvm::Value *a = nullptr;
  int64_t a_stride = 0;
  llvm::Value *b_packed = nullptr;
  llvm::Value *c = nullptr;
  bool c_is_zero = false;
  // scaled_dot (ops.def): C += (A . B) * scale[n], padded_columns(N) i32 by column, or null.
  // With scales_as_i16_pairs (the Maddubs plan only), each holds its scale in both i16
  // halves and the i16 pair sums widen by it (vpmaddwd), where they widen by ones otherwise;
  // else the widened i32 sums are multiplied by it.
  llvm::Value *column_scales = nullptr;
  bool scales_as_i16_pairs = false;
};

// Columns of B's packed rows: N rounded up to whole vectors of 8.
inline int64_t padded_columns(int64_t N) { return (N + 7) / 8 * 8; }

void emit_int_dot_tiles(llvm::IRBuilderBase &b, llvm::Module &m, const IntDotTilePlan &plan, int64_t M, int64_t N, int64_t K, const IntDotOperands &ops);

}  // namespace kdsl::codegen
