// mma_fragments.h - which lane holds which element of mma.sync's operand and accumulator
// fragments (PTX ISA), and the ldmatrix row addresses the lowering gives each lane
#pragma once
#include <cstdint>

#include <kdsl/dtype.h>

#include "codegen/gpu/staged_tile.h"
#include "codegen/target_info.h"

namespace kdsl::codegen::nvptx {

// mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32,
// mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 and
// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 are warp-wide: the 32 lanes together
// hold A (16 x k), B (k x 8) and C/D (16 x 8), each lane a few 32-bit registers. Write
//   g = lane / 4 (the "groupID"), t = lane % 4 ("threadID_in_group"),
//   e = 4 / element bytes (elements per 32-bit register: 2 for f16/bf16, 4 for s8, 1 for tf32).
// PTX ISA 8.x, "Matrix Fragments for mma.m16n8k16 with floating point type" and "... for
// mma.m16n8k32" (element i of a lane's fragment, registers holding e consecutive i each,
// the lowest i in the lowest bits):
//
//   A, 4 registers (a0..a7 for f16, a0..a15 for s8):
//     f16:  row = g      for i in {0,1,4,5}, g + 8 otherwise
//           col = 2t + (i & 1), plus 8 for i >= 4
//     s8:   row = g      for i in {0..3, 8..11}, g + 8 otherwise
//           col = 4t + (i & 3), plus 16 for i >= 8
//     tf32 (a0..a3): row = g for i in {0, 2}, g + 8 otherwise; col = t, plus 4 for i >= 2
//     So register j (0..3) holds row g + 8 (j & 1), columns e t .. e t + e - 1 of the
//     k-half j >> 1: an 8 x 8 matrix of 16-bit pairs per register, rows of 16 bytes.
//   B, 2 registers (b0..b3 for f16, b0..b7 for s8), "col": consecutive elements run down k:
//     f16:  row (k) = 2t + (i & 1), plus 8 for i >= 2;   col (n) = g
//     s8:   row (k) = 4t + (i & 3), plus 16 for i >= 4;  col (n) = g
//     tf32: row (k) = t, plus 4 for i = 1;                col (n) = g
//     Register j holds n = g, k = e t .. e t + e - 1 of the k-half j: the same 8 x 8
//     pattern over B transposed (n rows, k contiguous).
//   C and D, 4 registers (f32 or s32, one element each), for both instructions:
//           row = g for i < 2, g + 8 otherwise;  col = 2t + (i & 1)
//     So a lane holds 2 adjacent columns in rows g and g + 8: the accumulator layout
//     (layout.h, LayoutKind::Mma) is size_per_thread [1, 2], threads_per_warp [8, 4], and
//     warp_tile [16, 8] repeats that 8 x 8 lane tile twice down the rows.
//
// ldmatrix.sync.aligned.m8n8.x4.shared.b16 loads four 8 x 8 matrices of 16-bit elements
// (x2: two): lanes 8j .. 8j + 7 give the shared addresses of the 8 rows (16 bytes each) of
// matrix j, and lane l receives in register j the pair at row l / 4, columns 2 (l % 4) and
// 2 (l % 4) + 1 of matrix j; with .trans, the pair at rows 2 (l % 4) and 2 (l % 4) + 1,
// column l / 4. That is exactly the per-register pattern above, so each fragment register
// is one ldmatrix matrix:
//   A (row-major in shared memory, k contiguous): x4, matrix j = rows 8 (j & 1) .. + 7 of
//     the 16-row tile, bytes 16 (j >> 1) .. + 15 of the 32-byte k step: lane l points at
//     row l & 15, byte 16 (l >> 4)                                       (ldmatrix_a_row)
//   B, 16-bit, stored as loaded ([k][n], n contiguous): x4.trans over two n8 tiles, matrix
//     j = k rows 8 (j & 1) .. + 7, n tile j >> 1: lane l points at k row l & 15, n column
//     (l >> 4) * n_stride; register j is b register j & 1 of n tile j >> 1.
//                                                                    (ldmatrix_b_trans_row)
//   B, 8-bit (ldmatrix cannot transpose bytes): stored transposed ([n][k], k contiguous),
//     x4 without .trans, matrix j = n rows of tile j >> 1, k bytes 16 (j & 1) .. + 15:
//     lane l points at n row (l & 7) + (l >> 4) * n_stride, byte 16 ((l >> 3) & 1).
//                                                                          (ldmatrix_b_row)
//   x2 (one n tile): the same with n_stride = 0; lanes 16..31 give addresses ldmatrix
//   ignores.
// Shared rows are padded to an odd number of 16-byte chunks, so the 8 row addresses of a
// matrix fall in 8 different 16-byte bank groups: ldmatrix runs without bank conflicts.
//
// tests/codegen/nvptx_mma_test.cpp checks, on the host, that each fragment below covers its
// tile exactly once, that ldmatrix (simulated from the ISA text above) with these row
// addresses delivers exactly the A and B fragments, and that the accumulator layout's
// registers are the C fragments. The SIMT emulator runs mma.sync and ldmatrix from the same
// definitions, so the emulator test runs the whole tensor-core path on the CPU.

struct FragmentElement {
  int row, col;  // A: (m, k); B: (k, n); C: (m, n)
};

// Element i of `lane`'s A, B or C fragment for `instruction` (m16n8k16 f16/bf16, m16n8k32 s8,
// m16n8k8 tf32).
FragmentElement mma_a_element(const MatrixInstruction &instruction, int lane, int i);
FragmentElement mma_b_element(const MatrixInstruction &instruction, int lane, int i);
FragmentElement mma_c_element(const MatrixInstruction &instruction, int lane, int i);
// wgmma.mma_async.m64nNk16 with an f32 accumulator (PTX ISA, "Matrix Fragments for
// wgmma.mma_async.m64nNk16"): the 128 threads of a warpgroup hold D (64 x N), N / 2
// registers each. Thread `thread` (0..127) of the warpgroup, element i (0 .. N/2 - 1):
//   row = 16 (thread / 32) + g + 8 ((i >> 1) & 1),  col = 8 (i >> 2) + 2 t + (i & 1)
// with g, t of its lane as above: each warp holds 16 rows, and every 4 registers are one
// n8 tile of mma.sync's C fragment. A and B are read from shared memory (staged_tile.h).
FragmentElement wgmma_c_element(int thread, int i);

int mma_a_elements(const MatrixInstruction &instruction);  // per lane: 8 (f16), 16 (s8), 4 (tf32)
int mma_b_elements(const MatrixInstruction &instruction);  // per lane: 4 (f16), 8 (s8), 2 (tf32)
constexpr int kMmaCElements = 4;

using gpu::mma_b_transposed_load;  // staged_tile.h: the staged tiles these fragments are read from
using gpu::staged_row_bytes;

// The element (row, col) of an operand tile in shared memory whose row `lane` gives ldmatrix
// the address of. Templates over the integer type: the lowering emits them as IR (IrInt),
// the tests run them on ints.
template <class Int>
struct TileCoord {
  Int row, col;
};

// A: rows are m, columns k (elements of `elem_bytes`); one x4 covers 16 rows x 32 bytes.
template <class Int>
TileCoord<Int> ldmatrix_a_row(Int lane, int elem_bytes) {
  return {lane & 15, (lane >> 4) * (16 / elem_bytes)};
}

// B stored [k][n], 16-bit: rows are k, columns n; one x4.trans covers 16 k x two n8 tiles
// n_stride apart.
template <class Int>
TileCoord<Int> ldmatrix_b_trans_row(Int lane, int n_stride) {
  return {lane & 15, (lane >> 4) * n_stride};
}

// B stored [n][k]: rows are n, columns k; one x4 covers two n8 tiles n_stride apart x 32
// bytes of k.
template <class Int>
TileCoord<Int> ldmatrix_b_row(Int lane, int elem_bytes, int n_stride) {
  return {(lane & 7) + (lane >> 4) * n_stride, ((lane >> 3) & 1) * (16 / elem_bytes)};
}

}  // namespace kdsl::codegen::nvptx
