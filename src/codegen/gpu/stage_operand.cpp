// stage_operand.cpp - writes a dot operand from its registers into a shared-memory tile, for the matrix-dot hooks to read fragments from
#include <fmt/format.h>

#include <kdsl/error.h>

#include "codegen/gpu/gpu_lowering.h"

namespace kdsl::codegen::gpu {

llvm::Value *GpuLowering::staged_address(llvm::Value *base, const StagedLayout &layout, llvm::Value *row, llvm::Value *col_bytes) {
  return b_.CreateInBoundsGEP(b_.getInt8Ty(), base, layout.offset(IrInt{&b_, row}, IrInt{&b_, col_bytes}).v);
}

// In the element's storage type. Register groups consecutive along x's last axis are
// written as one vector of up to 16 bytes (aligned, so inside one 16-byte chunk of either
// layout); transposed, element by element.
void GpuLowering::stage_operand(ir::ValueId x, const std::vector<llvm::Value *> &regs, llvm::Value *base, const StagedLayout &layout, bool transpose) {
  const ir::Type &t = fn_.type(x);
  const Layout &xl = plan_.layout[size_t(x)];
  const RegisterMap &map = registers(x);
  llvm::Type *mem = storage_type(t.elem);
  int eb = dtype_bytes(t.elem);
  // to_storage stores a value that is a bf16 already (a loaded operand) as its bits.
  auto stored = [&](llvm::Value *e) { return to_storage(e, t.elem); };
  int width = transpose ? 1 : std::min(xl.size_per_thread[1], 16 / eb);
  for (int r = 0; r < map.count; r += width) {
    Index idx = own_index(x, r);
    llvm::Value *row = idx.coords[0], *col = idx.coords[1];
    if (transpose) std::swap(row, col);
    llvm::Value *p = staged_address(base, layout, row, b_.CreateMul(col, b_.getInt32(uint32_t(eb))));
    if (width == 1) {
      b_.CreateStore(stored(regs[size_t(r)]), p);
      continue;
    }
    llvm::Value *vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(mem, unsigned(width)));
    for (int i = 0; i < width; ++i) {
      if (map.offset[size_t(r + i)][1] != map.offset[size_t(r)][1] + i)
        internal_error(fmt::format("GPU lowering: staging a dot operand of '{}', a register group is not contiguous", fn_.name));
      vec = b_.CreateInsertElement(vec, stored(regs[size_t(r + i)]), uint64_t(i));
    }
    b_.CreateAlignedStore(vec, p, llvm::Align(uint64_t(width) * uint64_t(eb)));
  }
}

}  // namespace kdsl::codegen::gpu
