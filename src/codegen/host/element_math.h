// element_math.h - f16 widening and bf16 rounding emitted inline so the loop vectorizer can widen them
#pragma once
#include <llvm/IR/IRBuilder.h>

namespace kdsl::codegen {

// Widens f16 bits (an i16) to f32 exactly, subnormals, infinities and NaN included, with
// integer operations (and one exact multiply for subnormals): LLVM 19 vectorizes `fpext half` loops only 4 wide on
// x86, this 16 wide.
llvm::Value *emit_f16_bits_to_f32(llvm::IRBuilder<> &b, llvm::Value *bits);

// Rounds an f32 to the nearest bf16 (ties to even), as f32; NaN stays NaN.
llvm::Value *emit_round_to_bf16(llvm::IRBuilder<> &b, llvm::Value *x);

}  // namespace kdsl::codegen
