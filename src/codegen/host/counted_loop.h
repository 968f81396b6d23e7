// counted_loop.h - for (i = 0; i < n; ++i) in LLVM IR with loop-carried values as phis: the host's register tiles' k loops and the loops around them
#pragma once
#include <functional>
#include <vector>

#include <llvm/IR/IRBuilder.h>

namespace kdsl::codegen {

using CarriedValues = std::vector<llvm::Value *>;

// for (i = 0; i < n; ++i) carried = body(i, carried), with n >= 1 (the body runs before the
// test): each carried value is a phi in the loop header, starting from `init`. Returns the
// values the last iteration produced; the builder is left after the loop.
inline CarriedValues counted_loop(llvm::IRBuilderBase &b, llvm::Value *n, const CarriedValues &init,
                                  const std::function<CarriedValues(llvm::Value *i, const CarriedValues &carried)> &body, const char *name = "loop") {
  llvm::Function *f = b.GetInsertBlock()->getParent();
  llvm::BasicBlock *pre = b.GetInsertBlock();
  llvm::BasicBlock *head = llvm::BasicBlock::Create(b.getContext(), name, f);
  llvm::BasicBlock *exit = llvm::BasicBlock::Create(b.getContext(), std::string(name) + ".end", f);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode *i = b.CreatePHI(b.getInt64Ty(), 2, "i");
  i->addIncoming(b.getInt64(0), pre);
  std::vector<llvm::PHINode *> phis;
  CarriedValues carried;
  for (llvm::Value *v : init) {
    phis.push_back(b.CreatePHI(v->getType(), 2, "carried"));
    phis.back()->addIncoming(v, pre);
    carried.push_back(phis.back());
  }
  CarriedValues next = body(i, carried);
  llvm::Value *i_next = b.CreateAdd(i, b.getInt64(1), "i.next", true, true);
  llvm::BasicBlock *latch = b.GetInsertBlock();
  i->addIncoming(i_next, latch);
  for (size_t k = 0; k < phis.size(); ++k) phis[k]->addIncoming(next[k], latch);
  b.CreateCondBr(b.CreateICmpSLT(i_next, n), head, exit);
  b.SetInsertPoint(exit);
  return next;
}

}  // namespace kdsl::codegen
