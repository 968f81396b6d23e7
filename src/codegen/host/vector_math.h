// vector_math.h - f32 exp, exp2, log, log2, tanh, sigmoid and erf as inline polynomials the loop vectorizer widens
#pragma once
#include <llvm/IR/IRBuilder.h>

namespace kdsl::codegen {

// Each emits straight-line f32 IR (range reduction, a polynomial, selects for the edges) with
// no libm call and no branch, so a loop over a block vectorizes to the CPU's full width.
// Accuracy over the whole f32 range, as tests/codegen/vector_math_test.cpp checks it against
// double-precision std:: functions (the worst it measured over about 700,000 inputs in brackets):
//   exp, exp2: within 2 ulp (0.96, 0.91); overflow to inf, underflow through subnormals to 0.
//   log, log2: within 2 ulp (0.79, 1.46), subnormal inputs included; log(+-0) = -inf,
//              log(x < 0) = NaN, log(inf) = inf; log2 of a power of two is exact.
//   tanh:      within 3 ulp (1.21) and 1e-6 absolute (7.2e-8); +-1 from |x| >= 9.1; -0 kept.
//   sigmoid:   within 3 ulp (2.29), subnormal results included (no underflow to 0 before
//              x = -103.9).
//   erf:       within 3 ulp (2.30) and 1e-6 absolute (1.3e-7); +-1 from |x| >= 3.92; -0 kept.
// NaN in gives NaN out.
llvm::Value *emit_exp(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emit_exp2(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emit_log(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emit_log2(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emit_tanh(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emit_sigmoid(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *emit_erf(llvm::IRBuilder<> &b, llvm::Value *x);

}  // namespace kdsl::codegen
