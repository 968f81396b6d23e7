// host_calls.cpp - the walk over a kernel's calls that each vendor's table (nvvm_on_host.cpp, amdgcn_on_host.cpp) rewrites for the host
#include "tests/support/host_calls.h"

#include <kdsl/formats/fp8.h>
#include <kdsl/formats/half.h>

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

uint32_t cvt_f16x2_e4m3x2(uint32_t pair) {
  auto f16 = [](uint32_t byte) { return uint32_t(f32_to_f16_bits(e4m3_bits_to_f32(uint8_t(byte)))); };  // exact: every E4M3 is an f16
  return f16((pair >> 8) & 0xff) << 16 | f16(pair & 0xff);
}

uint32_t cvt_e4m3x2_f32(float a, float b) { return uint32_t(f32_to_e4m3_bits(a)) << 8 | f32_to_e4m3_bits(b); }

llvm::Value *stack_words(llvm::CallInst *at, unsigned n) {
  llvm::BasicBlock &entry = at->getFunction()->getEntryBlock();
  llvm::IRBuilder<> eb(&entry, entry.getFirstInsertionPt());
  return eb.CreateAlloca(llvm::ArrayType::get(eb.getInt32Ty(), n));
}

}  // namespace kdsl::simt
