// nvptx_intrinsics.h - the thin NVIDIA-specific part of the GPU lowering: special registers,
// barriers, warp shuffles, fast math and libdevice names, kernel marking
#pragma once
#include <llvm/IR/IRBuilder.h>

#include "ir/ir.h"

namespace kdsl::codegen::nvptx {

constexpr unsigned kGlobalAddressSpace = 1;
constexpr unsigned kSharedAddressSpace = 3;

llvm::Value *thread_id(llvm::IRBuilder<> &b);              // %tid.x
llvm::Value *block_id(llvm::IRBuilder<> &b, int axis);     // %ctaid
llvm::Value *grid_size(llvm::IRBuilder<> &b, int axis);    // %nctaid
void barrier(llvm::IRBuilder<> &b);                        // bar.sync 0
// The value of `v` (f32 or i32) in the lane whose id is this lane's xor `lane_mask`.
llvm::Value *shuffle_xor(llvm::IRBuilder<> &b, llvm::Value *v, int lane_mask);

// f32 math for one elementwise op (Exp, Exp2, Log, Log2, Sqrt, Rsqrt, Sin, Cos, Tanh,
// Sigmoid, Rem): fast PTX instructions where their precision is enough (ex2.approx for exp
// and exp2), libdevice's __nv_* functions otherwise (linked in by the PTX compiler).
llvm::Value *emit_math(llvm::IRBuilder<> &b, llvm::Module &m, OpKind kind, llvm::Value *x, llvm::Value *y = nullptr);

// Marks `f` a kernel entry (calling convention and nvvm.annotations) launched with at most
// `threads` threads per block.
void mark_kernel(llvm::Function *f, int threads);

}  // namespace kdsl::codegen::nvptx
