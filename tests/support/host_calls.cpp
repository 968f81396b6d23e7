// host_calls.cpp - the walk over a kernel's calls that each vendor's table (nvvm_on_host.cpp, amdgcn_on_host.cpp) rewrites for the host
#include "tests/support/host_calls.h"

namespace kdsl::simt {

void rewrite_calls(llvm::Module &m, CallRewrite rewrite) {
  std::vector<llvm::CallInst *> calls;
  for (llvm::Function &f : m)
    for (llvm::BasicBlock &bb : f)
      for (llvm::Instruction &i : bb)
        if (auto *c = llvm::dyn_cast<llvm::CallInst>(&i); c && (c->getCalledFunction() || c->isInlineAsm())) calls.push_back(c);
  for (llvm::CallInst *c : calls) {
    llvm::IRBuilder<> b(c);
    std::optional<llvm::Value *> r = rewrite(b, c);
    if (!r) continue;
    if (!c->getType()->isVoidTy()) c->replaceAllUsesWith(*r);
    c->eraseFromParent();
  }
}

llvm::Value *call_host(llvm::IRBuilder<> &b, const void *fn, llvm::Type *ret, const std::vector<llvm::Value *> &args) {
  std::vector<llvm::Type *> types;
  for (llvm::Value *a : args) types.push_back(a->getType());
  llvm::Value *address = b.CreateIntToPtr(b.getInt64(reinterpret_cast<uint64_t>(fn)), b.getPtrTy());
  return b.CreateCall(llvm::FunctionType::get(ret, types, false), address, args);
}

int32_t dot4_instruction(uint32_t a, uint32_t b, uint32_t c, uint32_t a_signed, uint32_t b_signed) {
  uint32_t sum = c;
  for (int t = 0; t < 4; ++t) {
    uint32_t x = (a >> (8 * t)) & 0xff, y = (b >> (8 * t)) & 0xff;
    int32_t xs = a_signed ? int32_t(int8_t(x)) : int32_t(x), ys = b_signed ? int32_t(int8_t(y)) : int32_t(y);
    sum += uint32_t(xs * ys);
  }
  return int32_t(sum);
}

llvm::Value *stack_words(llvm::CallInst *at, unsigned n) {
  llvm::BasicBlock &entry = at->getFunction()->getEntryBlock();
  llvm::IRBuilder<> eb(&entry, entry.getFirstInsertionPt());
  return eb.CreateAlloca(llvm::ArrayType::get(eb.getInt32Ty(), n));
}

}  // namespace kdsl::simt
