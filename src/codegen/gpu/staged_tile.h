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

// Whether B is staged as it is stored ([k][n]) and transposed by the fragment load (16-bit
// elements), rather than staged transposed ([n][k]) through registers (8-bit elements).
inline bool mma_b_transposed_load(const MatrixInstruction &instruction) { return dtype_bytes(instruction.b) == 2; }

// A dot's B operand given as trans(x) of a 2-D x ([N, K], k contiguous: weights stored by
// output row, K^T in attention): x, which is staged as it is stored, [n][k], and read by the
// [n][k] fragment loads for 16-bit and 8-bit elements alike, so the transpose is never
// materialized; else b itself. `def` maps each value to the op that defines it.
inline ir::ValueId dot_b_source(const ir::Function &fn, const std::vector<const ir::Op *> &def, ir::ValueId b) {
  const ir::Op *t = def[size_t(b)];
  return t && t->kind == OpKind::Trans && fn.type(b).shape.rank == 2 ? t->operands[0] : b;
}

}  // namespace kdsl::codegen::gpu
