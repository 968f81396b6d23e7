// lower_dot.cpp - dot on the GPU: matrix instructions where the plan says so, else operands through shared memory and each thread's outputs by FMA
#include <llvm/IR/Intrinsics.h>

#include "codegen/gpu/gpu_lowering.h"

namespace kdsl::codegen::gpu {

// c[m, n] = acc[m, n] + sum_k a[m, k] * b[k, n]. Dots the layout plan put on a matrix
// instruction go to the target's matrix_dot hook (NVIDIA: nvptx/lower_mma.cpp, AMD:
// amdgpu/lower_mfma.cpp). The rest: for the (m, n) each thread holds
// in the result's layout (any layout), k in a run-time loop over shared copies of a and b
// (a's rows padded so the column reads of a warp hit distinct banks). Correct for every
// dtype and shape: f32, shapes that are not whole instruction tiles, targets without matrix
// instructions, and the SIMT emulator by default.
void GpuLowering::emit_dot(const ir::Op &op) {
  if (int i = plan_.instruction_of(&op); i >= 0) return hooks_.matrix_dot(*this, op, target_.matrix_instructions[size_t(i)]);
  ir::ValueId a = op.operands[0], b = op.operands[1], v = op.results[0];
  const ir::Type &at = fn_.type(a), &bt = fn_.type(b), &ct = fn_.type(v);
  bool fp = is_float(ct.elem);
  std::vector<llvm::Value *> init = regs_as(op.operands[2], v);
  llvm::Value *as = shared_copy(a);
  llvm::Value *bs = shared_copy(b);
  std::vector<Index> idx;
  for (int r = 0; r < registers(v).count; ++r) idx.push_back(own_index(v, r));

  llvm::Function *f = b_.GetInsertBlock()->getParent();
  llvm::BasicBlock *pre = b_.GetInsertBlock();
  llvm::BasicBlock *loop = llvm::BasicBlock::Create(ctx_, "dot.k", f);
  llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx_, "dot.end", f);
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  llvm::PHINode *k = b_.CreatePHI(b_.getInt32Ty(), 2, "k");
  k->addIncoming(b_.getInt32(0), pre);
  std::vector<llvm::PHINode *> acc;
  for (llvm::Value *c : init) {
    acc.push_back(b_.CreatePHI(c->getType(), 2));
    acc.back()->addIncoming(c, pre);
  }
  std::vector<llvm::Value *> next;
  for (size_t r = 0; r < acc.size(); ++r) {
    llvm::Value *x = load_shared(as, at, {idx[r].coords[0], k});
    llvm::Value *y = load_shared(bs, bt, {k, idx[r].coords[1]});
    if (fp) {
      next.push_back(b_.CreateIntrinsic(llvm::Intrinsic::fma, {b_.getFloatTy()}, {x, y, acc[r]}));
    } else {
      llvm::Type *ty = acc[r]->getType();
      auto widen = [&](llvm::Value *e) { return is_unsigned(at.elem) ? b_.CreateZExt(e, ty) : b_.CreateSExt(e, ty); };  // u8 or i8
      next.push_back(b_.CreateAdd(acc[r], b_.CreateMul(widen(x), widen(y))));
    }
  }
  llvm::Value *k_next = b_.CreateAdd(k, b_.getInt32(1));
  k->addIncoming(k_next, loop);
  for (size_t r = 0; r < acc.size(); ++r) acc[r]->addIncoming(next[r], loop);
  b_.CreateCondBr(b_.CreateICmpSLT(k_next, b_.getInt32(uint32_t(at.shape[1]))), loop, exit);
  b_.SetInsertPoint(exit);
  std::vector<llvm::Value *> result;
  for (llvm::Value *c : next) result.push_back(fp ? round_to(c, ct.elem) : c);
  set_regs(v, std::move(result));
}

}  // namespace kdsl::codegen::gpu
