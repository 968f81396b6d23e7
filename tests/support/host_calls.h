// host_calls.h - rewriting a GPU kernel's vendor calls (intrinsics, device-library functions) into host code and emulator calls
#pragma once
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>

#include <optional>
#include <vector>

namespace kdsl::simt {

// One vendor's table: what replaces `call` (built with `b`, placed before it). nullopt leaves
// the call alone (not the vendor's); a null value removes a call whose result is unused.
using CallRewrite = std::optional<llvm::Value *> (*)(llvm::IRBuilder<> &b, llvm::CallInst *call);

// Applies `rewrite` to every direct call and every inline-assembly call in `m`.
void rewrite_calls(llvm::Module &m, CallRewrite rewrite);

// A call of the host function `fn` (an emulator entry point or libm) at its address.
llvm::Value *call_host(llvm::IRBuilder<> &b, const void *fn, llvm::Type *ret, const std::vector<llvm::Value *> &args);

// dot4's instructions (NVIDIA dp4a, AMD v_dot4_*) as their ISAs define them: c + the sum of
// the four products of a's and b's bytes, each byte signed when its flag is set, wrapping
// modulo 2^32 (the non-saturating forms).
int32_t dot4_instruction(uint32_t a, uint32_t b, uint32_t c, uint32_t a_signed, uint32_t b_signed);

// NVIDIA's fp8 conversions (sm_89+) as PTX defines them, through kdsl/formats' exact ones:
// cvt.rn.f16x2.e4m3x2 takes the two E4M3 bytes in `pair`'s low 16 bits to two f16s, the high
// byte to the high half; cvt.rn.satfinite.e4m3x2.f32 rounds a to the high byte, b to the low.
uint32_t cvt_f16x2_e4m3x2(uint32_t pair);
uint32_t cvt_e4m3x2_f32(float a, float b);

// `n` i32 words on the stack of `at`'s function, allocated once in its entry block (the calls
// that need them sit in loops).
llvm::Value *stack_words(llvm::CallInst *at, unsigned n);

// The instruction tables: NVVM (the NVPTX hooks' output) and AMDGCN (the AMDGPU hooks').
std::optional<llvm::Value *> nvvm_on_host(llvm::IRBuilder<> &b, llvm::CallInst *call);
std::optional<llvm::Value *> amdgcn_on_host(llvm::IRBuilder<> &b, llvm::CallInst *call);

}  // namespace kdsl::simt
