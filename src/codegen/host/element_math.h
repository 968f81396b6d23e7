// element_math.h - scalar float math emitted inline so the loop vectorizer can widen it (exp, exp2)
#pragma once
#include <llvm/IR/IRBuilder.h>

namespace kdsl::codegen {

// e^x and 2^x for f32 within 2 ulp, from Cody-Waite range reduction and the Cephes
// polynomials: no libm call, so loops calling them vectorize.
llvm::Value *emit_exp(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emit_exp2(llvm::IRBuilder<> &b, llvm::Value *x);

// Widens f16 bits (an i16) to f32 exactly, subnormals, infinities and NaN included, with
// integer operations (and one exact multiply for subnormals): LLVM 19 vectorizes `fpext half` loops only 4 wide on
// x86, this 16 wide.
llvm::Value *emit_f16_bits_to_f32(llvm::IRBuilder<> &b, llvm::Value *bits);

// Rounds an f32 to the nearest bf16 (ties to even), as f32; NaN stays NaN.
llvm::Value *emit_round_to_bf16(llvm::IRBuilder<> &b, llvm::Value *x);

}  // namespace kdsl::codegen
