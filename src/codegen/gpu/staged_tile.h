// staged_tile.h - how a dot operand tile sits in shared memory when staged for a matrix instruction (shared by the pipeliner and the matrix-dot hooks)
#pragma once
#include <cstdint>

#include <kdsl/dtype.h>

#include "codegen/target_info.h"

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

}  // namespace kdsl::codegen::gpu
