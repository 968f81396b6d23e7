// mfma_fragments.h - which lane of a wave64 holds which element of an MFMA instruction's A, B and C/D operands (AMD CDNA ISA)
#pragma once

#include "codegen/gpu/layout.h"
#include "codegen/target_info.h"

namespace kdsl::codegen::amdgpu {

// The MFMA instructions kdsl lowers dot to (target_info.cpp lists them per architecture):
//   gfx90a and gfx942: v_mfma_f32_32x32x8f16, v_mfma_f32_16x16x16f16,
//                      v_mfma_f32_32x32x8bf16_1k, v_mfma_f32_16x16x16bf16_1k;
//   gfx90a only:       v_mfma_i32_32x32x8i8, v_mfma_i32_16x16x16i8 (A, B: 4 x i8 in an i32);
//   gfx942 only:       v_mfma_i32_32x32x16_i8, v_mfma_i32_16x16x32_i8 (8 x i8 in an i64),
//                      which replace the two above (LLVM 19 selects each only on its own arch).
// All are single-block (CBSZ = ABID = BLGP = 0), m == n, and wave-wide over 64 lanes.
//
// The layouts, in the notation of AMD's Matrix Instruction Calculator
// (github.com/ROCm/amd_matrix_instruction_calculator, `--detail-instruction`) and the
// "Matrix fused-multiply-add" chapter of the AMD Instinct MI300 (CDNA3) ISA reference: with
// kpl = k * m / 64 the elements of A and B one lane holds (4, or 8 for the gfx942 i8 ones),
//   A[i][k] (m x k):  lane i + m * (k / kpl),  item k % kpl of the lane's A register(s);
//   B[k][j] (k x n):  lane j + n * (k / kpl),  item k % kpl;
//   D[i][j], 32 x 32: lane j + 32 * ((i / 4) % 2),  register 4 * (i / 8) + i % 4 (16 VGPRs);
//   D[i][j], 16 x 16: lane j + 16 * (i / 4),        register i % 4 (4 VGPRs).
// Items are packed lowest first (item 0 in bits 0..15 of the first VGPR for 16-bit types).
// Read from a lane: lane l holds row l % m of A and column l % n of B, kpl consecutive k
// from kpl * (l / m); and column l % n of D in runs of 4 consecutive rows. So
//  - one lane's A (B) fragment is kpl consecutive elements of a row of A (column of B):
//    one 8-byte LDS read from A staged row-major and B staged transposed ([n][k]);
//  - the accumulator layout (layout.h, LayoutKind::Mma) is size_per_thread [4, 1],
//    threads_per_warp [64 / n, n] (columns fastest): its lane tile, 4 * 64 / n rows x n
//    columns, is the instruction's whole 16 x 16 tile, and for 32 x 32 it is 8 x 32, repeated
//    4 times down the rows, which register_map numbers exactly as the calculator does.
//
// tests/codegen/amdgpu_mfma_test.cpp runs these functions through a host model of the
// instruction written from the calculator's formulas above (element to lane, the opposite
// direction) against a scalar matmul, and checks the accumulator layout against mfma_c_element.

constexpr int kMfmaWave = 64;

// Elements of A (and of B) one lane holds: 4, or 8 for the gfx942 i8 instructions.
inline int mfma_k_per_lane(const MatrixInstruction &instruction) { return instruction.k * instruction.m / kMfmaWave; }

template <class Int>
struct MfmaCoord {
  Int row, col;
};

// Where `lane`'s A fragment starts: row lane % m, column (k) kpl * (lane / m); item i is at
// column + i. Templates over the integer type: the lowering emits them as IR (IrInt), the
// tests run them on ints.
template <class Int>
MfmaCoord<Int> mfma_a_origin(const MatrixInstruction &instruction, Int lane) {
  return {lane & (instruction.m - 1), (lane >> __builtin_ctz(unsigned(instruction.m))) * mfma_k_per_lane(instruction)};
}

// Where `lane`'s B fragment starts: row (k) kpl * (lane / n), column lane % n; item i is at
// row + i.
template <class Int>
MfmaCoord<Int> mfma_b_origin(const MatrixInstruction &instruction, Int lane) {
  return {(lane >> __builtin_ctz(unsigned(instruction.n))) * mfma_k_per_lane(instruction), lane & (instruction.n - 1)};
}

// Element `i` (the i-th accumulator VGPR, the intrinsic's vector element i) of `lane`'s
// C/D fragment: (row, column) of the m x n tile.
MfmaCoord<int> mfma_c_element(const MatrixInstruction &instruction, int lane, int i);
// Accumulator VGPRs per lane: m * n / 64 (16 for 32 x 32, 4 for 16 x 16).
inline int mfma_c_elements(const MatrixInstruction &instruction) { return instruction.m * instruction.n / kMfmaWave; }

// The register (register_map's numbering of `map`, the accumulator's registers in `layout`)
// holding D element i of instruction tile (tm, tn) of this thread's wave: lane 0's position
// of element i plus the tile's origin, since every lane's registers sit at the same offsets
// from its thread_offset. -1 if the layout has no such register (a bug in kdsl).
int mfma_c_register(const gpu::Layout &layout, const gpu::RegisterMap &map, const MatrixInstruction &instruction, int tm, int tn, int i);

}  // namespace kdsl::codegen::amdgpu
