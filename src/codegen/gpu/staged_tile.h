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
//  - swizzled (wgmma: operands read through shared-memory descriptors, K-major): the row
//    is cut into slabs of `swizzle_bytes` (128, 64 or 32: the widest dividing it); a slab
//    holds every row at `swizzle_bytes` a row, and within each aligned group of 8 rows the
//    16-byte chunks of a row are permuted: chunk c of row r lies at chunk c ^ phase(r), the
//    phase being the address bits above 128 bytes (r & 7 at 128-byte rows, (r >> 1) & 3 at
//    64, (r >> 2) & 1 at 32). That is the descriptor's 128/64/32-byte swizzle mode (PTX ISA
//    "Shared Memory Matrix Layout"), which applies the same permutation to the address
//    bits, so slabs (and the tile) start on a multiple of 8 rows (kSwizzleAlign at most).
//    The 8 chunks of a 128-byte row land in 8 different bank groups for the 16-byte copies
//    of cp.async, and the descriptor steps 8 rows (stride_bytes) with no leading offset
//    while an instruction's 32 bytes of k stay inside one row.
// A tile is indexed by (row, column in bytes); the column is a multiple of 16 for the
// 16-byte copies of cp.async and vector stores, which stay contiguous in both forms.
struct StagedLayout {
  static constexpr int64_t kSwizzleAlign = 1024;  // 8 rows of the widest swizzle
  int64_t row_bytes = 0;      // padded rows: the pitch
  int swizzle_bytes = 0;      // swizzled: 128, 64 or 32 (0: padded rows)
  int64_t slab_bytes = 0;     // swizzled: one slab, every row (rounded up to 8)
  int64_t total_bytes = 0;

  bool swizzled() const { return swizzle_bytes != 0; }
  int64_t bytes() const { return total_bytes; }
  // The descriptor's fields for a swizzled tile: 8 rows apart (its stride byte offset); its
  // mode (1: 128 bytes, 2: 64, 3: 32).
  int64_t stride_bytes() const { return 8 * int64_t(swizzle_bytes); }
  int swizzle_mode() const { return swizzle_bytes == 128 ? 1 : swizzle_bytes == 64 ? 2 : 3; }
  // Templates over the integer type: the lowering runs them on IR values (IrInt), tests on ints.
  template <class Int>
  Int offset(Int row, Int col_bytes) const {
    if (!swizzled()) return row * int(row_bytes) + col_bytes;
    int lg = __builtin_ctz(unsigned(swizzle_bytes));
    Int within = col_bytes & (swizzle_bytes - 1);
    Int phase = (row >> (7 - lg)) & (swizzle_bytes / 16 - 1);
    return (col_bytes >> lg) * int(slab_bytes) + row * swizzle_bytes + (((within >> 4) ^ phase) << 4) + (within & 15);
  }
};

// `rows` rows of `width_bytes` (a multiple of 32) swizzled: slabs of the widest swizzle that
// divides the rows. Also the layout of a TMA store's box (lower_tile_store.cpp).
inline StagedLayout swizzled_layout(int64_t rows, int64_t width_bytes) {
  StagedLayout l;
  l.swizzle_bytes = width_bytes % 128 == 0 ? 128 : width_bytes % 64 == 0 ? 64 : 32;
  l.slab_bytes = (rows + 7) / 8 * l.stride_bytes();
  l.total_bytes = width_bytes / l.swizzle_bytes * l.slab_bytes;
  return l;
}

// A TMA store's box of `rows` rows of `width_bytes` (a multiple of 16): swizzled where the
// rows allow it (a multiple of 32 bytes), so that the threads writing an accumulator's rows
// into it spread over the banks; otherwise rows back to back, unpadded, as TMA reads an
// unswizzled box.
inline StagedLayout store_box_layout(int64_t rows, int64_t width_bytes) {
  if (width_bytes % 32 == 0) return swizzled_layout(rows, width_bytes);
  StagedLayout l;
  l.row_bytes = width_bytes;
  l.total_bytes = rows * width_bytes;
  return l;
}

// The layout `rows` rows of `width_bytes` are staged in for `instruction`. Descriptor
// operands need width_bytes a multiple of 32 (an instruction's k: 16 16-bit or 32 8-bit
// elements).
inline StagedLayout staged_layout(const MatrixInstruction &instruction, int64_t rows, int64_t width_bytes) {
  if (instruction.descriptor_operands) return swizzled_layout(rows, width_bytes);
  StagedLayout l;
  l.row_bytes = staged_row_bytes(width_bytes);
  l.total_bytes = rows * l.row_bytes;
  return l;
}

// Whether B is staged as it is stored ([k][n]) and transposed by the fragment load (16-bit
// elements), rather than staged transposed ([n][k]) through registers (8-bit elements).
// For fragment loads (mma.sync's ldmatrix); descriptor operands: b_as_stored.
inline bool mma_b_transposed_load(const MatrixInstruction &instruction) { return dtype_bytes(instruction.b) == 2 && !instruction.descriptor_operands; }

// The columns one descriptor instruction covers for a dot of N columns: the largest valid n
// that divides N and is at most its max_n (N = 384 runs as two of 192). Every multiple of 8 is
// valid for 16-bit operands; 8-bit ones take 8, 16, 24 and then multiples of 16 (PTX ISA,
// wgmma shapes). 0 when none divides N.
inline int descriptor_n(int64_t N, const MatrixInstruction &mi) {
  bool bytes = dtype_bytes(mi.a) == 1;
  for (int n = mi.max_n; n >= mi.n; n -= mi.n)
    if (N % n == 0 && (!bytes || n <= 24 || n % 16 == 0)) return n;
  return 0;
}

// Whether a dot's B given [k][n] (n contiguous; not trans(x), dot_b_source) is staged as it is
// stored, so that cp.async can copy it: mma.sync's 16-bit B, transposed by ldmatrix.trans, and
// wgmma's 16-bit B, read MN-major (its transpose bit) through descriptors whose leading
// offset steps from one swizzle slab of n to the next. There each instruction's n columns
// must be whole slabs of the tile's rows of N columns (staged_layout). Otherwise B is staged
// [n][k], through registers.
inline bool b_as_stored(const MatrixInstruction &instruction, int64_t n_extent) {
  if (!instruction.descriptor_operands) return mma_b_transposed_load(instruction);
  if (dtype_bytes(instruction.b) != 2 || instruction.tf32) return false;  // the transpose bit exists for f16 and bf16 only
  const int n = descriptor_n(n_extent, instruction);
  const int64_t width = n_extent * 2, swizzle = staged_layout(instruction, 8, width).swizzle_bytes;
  return n > 0 && width % 32 == 0 && (int64_t(n) * 2) % swizzle == 0;
}

// A dot's B operand given as trans(x) of a 2-D x ([N, K], k contiguous: weights stored by
// output row, K^T in attention): x, which is staged as it is stored, [n][k], and read by the
// [n][k] fragment loads for 16-bit and 8-bit elements alike, so the transpose is never
// materialized; else b itself. `def` maps each value to the op that defines it.
inline ir::ValueId dot_b_source(const ir::Function &fn, const std::vector<const ir::Op *> &def, ir::ValueId b) {
  const ir::Op *t = def[size_t(b)];
  return t && t->kind == OpKind::Trans && fn.type(b).shape.rank == 2 ? t->operands[0] : b;
}

}  // namespace kdsl::codegen::gpu
