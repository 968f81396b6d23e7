// staged_tile.h - how a dot operand tile sits in shared memory when staged for a matrix instruction (shared by the pipeliner and the matrix-dot hooks)
#pragma once
#include <cstdint>
#include <vector>

#include <kdsl/dtype.h>

#include "codegen/target_info.h"
#include "ir/ir.h"

namespace kdsl::codegen::gpu {

// The row pitch of an operand tile staged in shared memory: `bytes` rounded up to an odd
// number of 16-byte chunks, so the 8 rows of an 8 x 8 fragment load (ldmatrix) hit 8
// different bank groups.
inline int64_t staged_row_bytes(int64_t bytes) {
  int64_t chunks = (bytes + 15) / 16;
  return (chunks % 2 ? chunks : chunks + 1) * 16;
}

// Where each element of a staged operand tile lies, for the instruction that reads it:
//  - padded rows (mma.sync through ldmatrix, MFMA): row-major, `row_bytes` a row
//    (staged_row_bytes);
//  - core matrices (wgmma, operands read by shared-memory descriptors, no swizzle, K-major):
//    the tile cut into 8-row x 16-byte core matrices of 128 contiguous bytes each, rows 16
//    bytes apart; the core matrices of one 8-row group follow each other along the row (the
//    descriptor's leading byte offset, kCoreMatrixBytes), and the groups lie `group_bytes`
//    apart (its stride byte offset).
// A tile is indexed by (row, column in bytes); the column is a multiple of 16 for the
// 16-byte copies of cp.async and vector stores, which stay contiguous in both forms.
struct StagedLayout {
  static constexpr int64_t kCoreMatrixBytes = 128;
  bool core_matrices = false;
  int64_t row_bytes = 0;    // padded rows
  int64_t group_bytes = 0;  // core matrices: 8 rows, the whole width

  int64_t bytes(int64_t rows) const { return core_matrices ? (rows + 7) / 8 * group_bytes : rows * row_bytes; }
  // Templates over the integer type: the lowering runs them on IR values (IrInt), tests on ints.
  template <class Int>
  Int offset(Int row, Int col_bytes) const {
    if (!core_matrices) return row * int(row_bytes) + col_bytes;
    return (row >> 3) * int(group_bytes) + (col_bytes >> 4) * int(kCoreMatrixBytes) + (row & 7) * 16 + (col_bytes & 15);
  }
};

// The layout a tile of rows `width_bytes` wide is staged in for `instruction`.
inline StagedLayout staged_layout(const MatrixInstruction &instruction, int64_t width_bytes) {
  StagedLayout l;
  l.core_matrices = instruction.descriptor_operands;
  if (l.core_matrices) l.group_bytes = (width_bytes + 15) / 16 * StagedLayout::kCoreMatrixBytes;
  else l.row_bytes = staged_row_bytes(width_bytes);
  return l;
}

// Whether B is staged as it is stored ([k][n]) and transposed by the fragment load (16-bit
// elements), rather than staged transposed ([n][k]) through registers (8-bit elements).
// Descriptor operands (wgmma) are read K-major only, so B is always staged [n][k].
inline bool mma_b_transposed_load(const MatrixInstruction &instruction) { return dtype_bytes(instruction.b) == 2 && !instruction.descriptor_operands; }

// A dot's B operand given as trans(x) of a 2-D x ([N, K], k contiguous: weights stored by
// output row, K^T in attention): x, which is staged as it is stored, [n][k], and read by the
// [n][k] fragment loads for 16-bit and 8-bit elements alike, so the transpose is never
// materialized; else b itself. `def` maps each value to the op that defines it.
inline ir::ValueId dot_b_source(const ir::Function &fn, const std::vector<const ir::Op *> &def, ir::ValueId b) {
  const ir::Op *t = def[size_t(b)];
  return t && t->kind == OpKind::Trans && fn.type(b).shape.rank == 2 ? t->operands[0] : b;
}

}  // namespace kdsl::codegen::gpu
