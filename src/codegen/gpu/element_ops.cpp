// element_ops.cpp - one element of an elementwise op or a view, at an index, for the GPU lowering
#include <fmt/format.h>
#include <llvm/IR/Intrinsics.h>

#include <kdsl/error.h>

#include "codegen/gpu/gpu_lowering.h"

namespace kdsl::codegen::gpu {

llvm::Value *GpuLowering::compute(const ir::Op &op, const Index &idx) {
  const ir::Type &out = fn_.type(op.results[0]);
  auto arg = [&](size_t i) { return element(op.operands[i], idx); };
  auto arg_type = [&](size_t i) -> const ir::Type & { return fn_.type(op.operands[i]); };
  // Views re-index their operand: the result is not that operand's own register any more.
  // Where axis 0 stays axis 0, the reader's row stays known (Index::row_layout).
  auto viewed = [&](std::vector<llvm::Value *> coords, bool keeps_rows = false) {
    Index mapped;
    mapped.coords = std::move(coords);
    if (keeps_rows) mapped.row_layout = idx.row_layout, mapped.row_offset = idx.row_offset;
    return element(op.operands[0], mapped);
  };
  switch (op.kind) {
    case OpKind::Constant: return constant(out, op.ints.empty() ? 0 : op.ints[0], op.fval);
    case OpKind::ProgramId: return pid_[size_t(op.ints[0])];
    case OpKind::NumPrograms: return grid_[size_t(op.ints[0])];
    case OpKind::Arange: return b_.CreateAdd(idx.coords[0], b_.getInt32(uint32_t(op.ints[0])));
    case OpKind::Broadcast: {
      const ir::Shape &in = arg_type(0).shape;
      std::vector<llvm::Value *> mapped(idx.coords.size());
      for (int d = 0; d < in.rank; ++d) mapped[size_t(d)] = in[d] == 1 ? b_.getInt32(0) : idx.coords[size_t(d)];
      return viewed(mapped, in.rank >= 1 && in[0] != 1);
    }
    case OpKind::ExpandDims: {
      std::vector<llvm::Value *> mapped = idx.coords;
      mapped.erase(mapped.begin() + op.ints[0]);
      return viewed(mapped, op.ints[0] != 0);
    }
    case OpKind::Reshape: {
      const ir::Shape &in = arg_type(0).shape;
      llvm::Value *flat = b_.getInt32(0);
      for (int d = 0; d < out.shape.rank; ++d) flat = b_.CreateAdd(b_.CreateMul(flat, b_.getInt32(uint32_t(out.shape[d]))), idx.coords[size_t(d)]);
      std::vector<llvm::Value *> mapped(size_t(in.rank));
      for (int d = in.rank - 1; d >= 0; --d) {
        mapped[size_t(d)] = b_.CreateURem(flat, b_.getInt32(uint32_t(in[d])));
        flat = b_.CreateUDiv(flat, b_.getInt32(uint32_t(in[d])));
      }
      return viewed(mapped);
    }
    case OpKind::Trans: {
      std::vector<llvm::Value *> mapped(idx.coords.size());
      for (size_t d = 0; d < idx.coords.size(); ++d) mapped[size_t(op.ints[d])] = idx.coords[d];
      return viewed(mapped);
    }
    case OpKind::PtrAdd: {
      llvm::Value *offset = arg(1);
      offset = is_unsigned(arg_type(1).elem) ? b_.CreateZExt(offset, b_.getInt64Ty()) : b_.CreateSExt(offset, b_.getInt64Ty());
      return b_.CreateGEP(storage_type(out.elem), arg(0), offset);
    }
    default: {
      if (!ir::is_elementwise(op.kind)) internal_error(fmt::format("GPU lowering: {} cannot be computed per element", ir::op_name(op.kind)));
      return el_.elementwise(op, fn_, arg);
    }
  }
}

llvm::Value *GpuLowering::cast(llvm::Value *v, DType from, DType to) { return el_.cast(v, from, to); }

}  // namespace kdsl::codegen::gpu
