// bounds_checks.cpp - checked mode's tests and its cold violation report, emitted into host kernels
#include "codegen/host/bounds_checks.h"

#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include <cstddef>

#include "codegen/codegen.h"
#include "codegen/host/pointer_roots.h"

namespace kdsl::codegen {

BoundsChecks::BoundsChecks(const ir::Function &fn, llvm::IRBuilder<> &b, llvm::Module &m, llvm::Value *slots, std::array<llvm::Value *, 3> program)
    : b_(b), m_(m), roots_(pointer_roots(fn)), program_(program) {
  const uint64_t n = fn.args.size();
  auto slot = [&](uint64_t i, const char *name) { return b_.CreateLoad(b_.getInt64Ty(), b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), slots, i), name); };
  base_.resize(n, nullptr);
  extent_.resize(n, nullptr);
  for (uint64_t i = 0; i < n; ++i) {
    if (!fn.type(fn.args[i].value).is_ptr) continue;
    base_[i] = slot(n + i, "check.base");
    extent_[i] = slot(2 * n + i, "check.extent");
  }
  record_ = b_.CreateIntToPtr(slot(3 * n, "check.record"), b_.getPtrTy());
}

llvm::Value *BoundsChecks::in_bounds(const ir::Op &op, ir::ValueId pointer, llvm::Value *address, int64_t bytes) {
  const std::vector<int> &roots = roots_[size_t(pointer)];
  if (roots.empty()) return b_.getTrue();
  llvm::Value *at = b_.CreatePtrToInt(address, b_.getInt64Ty());
  llvm::Value *ok = nullptr, *first_offset = nullptr;
  for (int r : roots) {
    // Unsigned: an address below the base wraps to a huge offset. An unknown extent arrives as
    // base 0 and extent UINT64_MAX, which every real address passes.
    llvm::Value *offset = b_.CreateSub(at, base_[size_t(r)]);
    llvm::Value *end = b_.CreateAdd(offset, b_.getInt64(uint64_t(bytes)));
    llvm::Value *inside = b_.CreateAnd(b_.CreateICmpULT(offset, extent_[size_t(r)]), b_.CreateICmpULE(end, extent_[size_t(r)]));
    ok = ok ? b_.CreateOr(ok, inside) : inside;
    if (!first_offset) first_offset = offset;
  }
  llvm::Function *f = b_.GetInsertBlock()->getParent();
  llvm::BasicBlock *fail = llvm::BasicBlock::Create(m_.getContext(), "check.fail", f);
  llvm::BasicBlock *done = llvm::BasicBlock::Create(m_.getContext(), "check.done", f);
  b_.CreateCondBr(ok, done, fail, llvm::MDBuilder(m_.getContext()).createBranchWeights(1u << 20, 1));
  b_.SetInsertPoint(fail);
  b_.CreateCall(report_function(), {record_, b_.getInt64(uint64_t(roots.front())), b_.getInt64(uint64_t(op.kind)), first_offset, program_[0], program_[1], program_[2]});
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
  return ok;
}

// void report(BoundsViolation *record, i64 arg, i64 op, i64 byte_offset, i32 x, i32 y, i32 z):
// the first caller (an atomic exchange of `failed`) fills the record. Out of line and cold, so
// the loops around the checks stay small.
llvm::Function *BoundsChecks::report_function() {
  if (report_) return report_;
  llvm::LLVMContext &ctx = m_.getContext();
  auto *i64 = b_.getInt64Ty(), *i32 = b_.getInt32Ty();
  auto *fty = llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy(), i64, i64, i64, i32, i32, i32}, false);
  report_ = llvm::Function::Create(fty, llvm::Function::InternalLinkage, "kdsl.bounds_violation", m_);
  report_->addFnAttr(llvm::Attribute::NoInline);
  report_->addFnAttr(llvm::Attribute::Cold);
  report_->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::IRBuilder<> r(llvm::BasicBlock::Create(ctx, "entry", report_));
  llvm::BasicBlock *first = llvm::BasicBlock::Create(ctx, "first", report_);
  llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx, "done", report_);
  llvm::Value *record = report_->getArg(0);
  auto field = [&](size_t offset) { return r.CreateConstInBoundsGEP1_64(i64, record, offset / sizeof(int64_t)); };
  llvm::Value *prior = r.CreateAtomicRMW(llvm::AtomicRMWInst::Xchg, field(offsetof(BoundsViolation, failed)), r.getInt64(1), llvm::MaybeAlign(8),
                                         llvm::AtomicOrdering::Monotonic);
  r.CreateCondBr(r.CreateICmpEQ(prior, r.getInt64(0)), first, done);
  r.SetInsertPoint(first);
  r.CreateStore(report_->getArg(1), field(offsetof(BoundsViolation, arg)));
  r.CreateStore(report_->getArg(2), field(offsetof(BoundsViolation, op)));
  r.CreateStore(report_->getArg(3), field(offsetof(BoundsViolation, byte_offset)));
  for (unsigned axis = 0; axis < 3; ++axis)
    r.CreateStore(r.CreateSExt(report_->getArg(4 + axis), i64), field(offsetof(BoundsViolation, program) + axis * sizeof(int64_t)));
  r.CreateBr(done);
  r.SetInsertPoint(done);
  r.CreateRetVoid();
  return report_;
}

}  // namespace kdsl::codegen
