// element_ops.cpp - one element of an elementwise op or a view, at an index, for the GPU lowering
#include <fmt/format.h>
#include <llvm/IR/Intrinsics.h>

#include <kdsl/error.h>

#include "codegen/nvptx/gpu_lowering.h"
#include "codegen/nvptx/nvptx_intrinsics.h"

namespace kdsl::codegen::nvptx {

llvm::Value *GpuLowering::compute(const ir::Op &op, const Index &idx) {
  const ir::Type &out = fn_.type(op.results[0]);
  auto arg = [&](size_t i) { return element(op.operands[i], idx); };
  auto arg_type = [&](size_t i) -> const ir::Type & { return fn_.type(op.operands[i]); };
  bool fp = !out.is_ptr && is_float(out.elem);
  bool arg_fp = !op.operands.empty() && !arg_type(0).is_ptr && is_float(arg_type(0).elem);
  bool sign = op.operands.empty() || !is_unsigned(arg_type(0).elem);
  auto fin = [&](llvm::Value *v) { return fp ? round_to(v, out.elem) : v; };
  auto intrinsic = [&](llvm::Intrinsic::ID id, std::vector<llvm::Value *> args) { return b_.CreateIntrinsic(id, {args[0]->getType()}, args); };
  // Views re-index their operand: the result is not that operand's own register any more.
  auto viewed = [&](std::vector<llvm::Value *> coords) {
    Index mapped;
    mapped.coords = std::move(coords);
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
      return viewed(mapped);
    }
    case OpKind::ExpandDims: {
      std::vector<llvm::Value *> mapped = idx.coords;
      mapped.erase(mapped.begin() + op.ints[0]);
      return viewed(mapped);
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
    case OpKind::Add: return fp ? fin(b_.CreateFAdd(arg(0), arg(1))) : b_.CreateAdd(arg(0), arg(1));
    case OpKind::Sub: return fp ? fin(b_.CreateFSub(arg(0), arg(1))) : b_.CreateSub(arg(0), arg(1));
    case OpKind::Mul: return fp ? fin(b_.CreateFMul(arg(0), arg(1))) : b_.CreateMul(arg(0), arg(1));
    case OpKind::Div: return fp ? fin(b_.CreateFDiv(arg(0), arg(1))) : sign ? b_.CreateSDiv(arg(0), arg(1)) : b_.CreateUDiv(arg(0), arg(1));
    case OpKind::Rem:
      return fp ? fin(emit_math(b_, m_, OpKind::Rem, arg(0), arg(1))) : sign ? b_.CreateSRem(arg(0), arg(1)) : b_.CreateURem(arg(0), arg(1));
    case OpKind::Min:
      return fp ? intrinsic(llvm::Intrinsic::minnum, {arg(0), arg(1)}) : intrinsic(sign ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, {arg(0), arg(1)});
    case OpKind::Max:
      return fp ? intrinsic(llvm::Intrinsic::maxnum, {arg(0), arg(1)}) : intrinsic(sign ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, {arg(0), arg(1)});
    case OpKind::And: return b_.CreateAnd(arg(0), arg(1));
    case OpKind::Or: return b_.CreateOr(arg(0), arg(1));
    case OpKind::Xor: return b_.CreateXor(arg(0), arg(1));
    case OpKind::Shl: return b_.CreateShl(arg(0), arg(1));
    case OpKind::Shr: return sign ? b_.CreateAShr(arg(0), arg(1)) : b_.CreateLShr(arg(0), arg(1));
    case OpKind::CmpLt: return arg_fp ? b_.CreateFCmpOLT(arg(0), arg(1)) : sign ? b_.CreateICmpSLT(arg(0), arg(1)) : b_.CreateICmpULT(arg(0), arg(1));
    case OpKind::CmpLe: return arg_fp ? b_.CreateFCmpOLE(arg(0), arg(1)) : sign ? b_.CreateICmpSLE(arg(0), arg(1)) : b_.CreateICmpULE(arg(0), arg(1));
    case OpKind::CmpGt: return arg_fp ? b_.CreateFCmpOGT(arg(0), arg(1)) : sign ? b_.CreateICmpSGT(arg(0), arg(1)) : b_.CreateICmpUGT(arg(0), arg(1));
    case OpKind::CmpGe: return arg_fp ? b_.CreateFCmpOGE(arg(0), arg(1)) : sign ? b_.CreateICmpSGE(arg(0), arg(1)) : b_.CreateICmpUGE(arg(0), arg(1));
    case OpKind::CmpEq: return arg_fp ? b_.CreateFCmpOEQ(arg(0), arg(1)) : b_.CreateICmpEQ(arg(0), arg(1));
    case OpKind::CmpNe: return arg_fp ? b_.CreateFCmpUNE(arg(0), arg(1)) : b_.CreateICmpNE(arg(0), arg(1));
    case OpKind::PtrAdd: {
      llvm::Value *offset = arg(1);
      offset = is_unsigned(arg_type(1).elem) ? b_.CreateZExt(offset, b_.getInt64Ty()) : b_.CreateSExt(offset, b_.getInt64Ty());
      return b_.CreateGEP(storage_type(out.elem), arg(0), offset);
    }
    case OpKind::Neg: return fp ? b_.CreateFNeg(arg(0)) : b_.CreateNeg(arg(0));
    case OpKind::Not: return b_.CreateNot(arg(0));
    case OpKind::Exp: case OpKind::Exp2: case OpKind::Log: case OpKind::Log2: case OpKind::Sqrt: case OpKind::Rsqrt:
    case OpKind::Sin: case OpKind::Cos: case OpKind::Tanh: case OpKind::Sigmoid:
      return fin(emit_math(b_, m_, op.kind, arg(0)));
    case OpKind::Abs: return fp ? intrinsic(llvm::Intrinsic::fabs, {arg(0)}) : b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, arg(0), b_.getFalse());
    case OpKind::Cast: return cast(arg(0), arg_type(0).elem, out.elem);
    case OpKind::Bitcast: {
      llvm::Value *bits = b_.CreateBitCast(to_storage(arg(0), arg_type(0).elem), storage_type(out.elem));
      return from_storage(bits, out.elem);
    }
    case OpKind::Fma: return fin(intrinsic(llvm::Intrinsic::fma, {arg(0), arg(1), arg(2)}));
    case OpKind::Select: return b_.CreateSelect(arg(0), arg(1), arg(2));
    default:
      internal_error(fmt::format("nvptx lowering: {} cannot be computed per element", ir::op_name(op.kind)));
  }
}

llvm::Value *GpuLowering::cast(llvm::Value *v, DType from, DType to) {
  if (is_float(from)) {
    if (is_float(to)) return round_to(v, to);
    if (to == DType::Bool) return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(b_.getFloatTy(), 0.0));
    return is_unsigned(to) ? b_.CreateFPToUI(v, compute_type(to)) : b_.CreateFPToSI(v, compute_type(to));
  }
  if (is_float(to)) return round_to(is_unsigned(from) ? b_.CreateUIToFP(v, b_.getFloatTy()) : b_.CreateSIToFP(v, b_.getFloatTy()), to);
  if (to == DType::Bool) return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  return b_.CreateIntCast(v, compute_type(to), !is_unsigned(from));
}

}  // namespace kdsl::codegen::nvptx
