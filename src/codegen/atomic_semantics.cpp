// atomic_semantics.cpp - atomicrmw / cmpxchg for each atomic op, f32 max and min by integer order
#include "codegen/atomic_semantics.h"

#include <fmt/format.h>

#include <kdsl/error.h>

namespace kdsl::codegen {
namespace {

constexpr auto kOrder = llvm::AtomicOrdering::Monotonic;

llvm::Value *rmw(llvm::IRBuilder<> &b, llvm::AtomicRMWInst::BinOp op, llvm::Value *ptr, llvm::Value *value) {
  return b.CreateAtomicRMW(op, ptr, value, llvm::MaybeAlign(), kOrder);
}

// f32 max / min on the bits: by the sign of v, a signed or an unsigned integer atomic.
llvm::Value *float_extreme(llvm::IRBuilder<> &b, bool max, llvm::Value *ptr, llvm::Value *value) {
  llvm::Value *bits = b.CreateBitCast(value, b.getInt32Ty());
  llvm::Value *negative = b.CreateICmpSLT(bits, b.getInt32(0));
  llvm::Function *f = b.GetInsertBlock()->getParent();
  llvm::LLVMContext &ctx = b.getContext();
  llvm::BasicBlock *positive_block = llvm::BasicBlock::Create(ctx, "atomic.nonnegative", f);
  llvm::BasicBlock *negative_block = llvm::BasicBlock::Create(ctx, "atomic.negative", f);
  llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx, "atomic.end", f);
  b.CreateCondBr(negative, negative_block, positive_block);
  b.SetInsertPoint(positive_block);
  llvm::Value *old_positive = rmw(b, max ? llvm::AtomicRMWInst::Max : llvm::AtomicRMWInst::Min, ptr, bits);
  b.CreateBr(done);
  b.SetInsertPoint(negative_block);
  llvm::Value *old_negative = rmw(b, max ? llvm::AtomicRMWInst::UMin : llvm::AtomicRMWInst::UMax, ptr, bits);
  b.CreateBr(done);
  b.SetInsertPoint(done);
  llvm::PHINode *old = b.CreatePHI(b.getInt32Ty(), 2);
  old->addIncoming(old_positive, positive_block);
  old->addIncoming(old_negative, negative_block);
  return b.CreateBitCast(old, b.getFloatTy());
}

}  // namespace

llvm::Value *emit_atomic_update(llvm::IRBuilder<> &b, OpKind kind, DType elem, llvm::Value *ptr, llvm::Value *value, llvm::Value *compare) {
  const bool fp = elem == DType::F32, sign = !is_unsigned(elem);
  if (!fp && elem != DType::I32 && elem != DType::U32 && elem != DType::I64)
    internal_error(fmt::format("{} on {}: memory.h admits f32, i32, u32 and i64 only", ir::op_name(kind), dtype_name(elem)));
  // Exchange and compare-and-swap move f32 as its bits.
  auto as_bits = [&](llvm::Value *v) { return fp ? b.CreateBitCast(v, b.getInt32Ty()) : v; };
  auto from_bits = [&](llvm::Value *v) { return fp ? b.CreateBitCast(v, b.getFloatTy()) : v; };
  switch (kind) {
    case OpKind::AtomicAdd: return rmw(b, fp ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add, ptr, value);
    case OpKind::AtomicMax:
      if (fp) return float_extreme(b, true, ptr, value);
      return rmw(b, sign ? llvm::AtomicRMWInst::Max : llvm::AtomicRMWInst::UMax, ptr, value);
    case OpKind::AtomicMin:
      if (fp) return float_extreme(b, false, ptr, value);
      return rmw(b, sign ? llvm::AtomicRMWInst::Min : llvm::AtomicRMWInst::UMin, ptr, value);
    case OpKind::AtomicXchg: return from_bits(rmw(b, llvm::AtomicRMWInst::Xchg, ptr, as_bits(value)));
    case OpKind::AtomicCas: {
      llvm::Value *pair = b.CreateAtomicCmpXchg(ptr, as_bits(compare), as_bits(value), llvm::MaybeAlign(), kOrder, kOrder);
      return from_bits(b.CreateExtractValue(pair, 0));
    }
    default: internal_error(fmt::format("emit_atomic_update: {} is not an atomic", ir::op_name(kind)));
  }
}

}  // namespace kdsl::codegen
