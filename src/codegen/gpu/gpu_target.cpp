// gpu_target.cpp - the hooks' shared parts: wide shuffles from 32-bit ones, refusals for features a target does not list
#include "codegen/gpu/gpu_target.h"

#include <kdsl/error.h>

#include "codegen/fp8_conversions.h"

namespace kdsl::codegen::gpu {

// The layout plan and the pipelining plan only ask for these where TargetInfo lists matrix
// instructions or async copies, so reaching them is a bug in kdsl, not a user error.
void GpuTarget::matrix_dot(GpuLowering &, const ir::Op &, const MatrixInstruction &instruction) {
  internal_error(std::string("GPU lowering: ") + info_.name + " has no lowering for the matrix instruction " + instruction.name);
}
void GpuTarget::async_copy_16(llvm::IRBuilder<> &, llvm::Value *, llvm::Value *, llvm::Value *) {
  internal_error("GPU lowering: " + info_.name + " has no asynchronous copies");
}
void GpuTarget::async_commit(llvm::IRBuilder<> &) { internal_error("GPU lowering: " + info_.name + " has no asynchronous copies"); }
void GpuTarget::async_wait(llvm::IRBuilder<> &, int) { internal_error("GPU lowering: " + info_.name + " has no asynchronous copies"); }
std::vector<llvm::Value *> GpuTarget::wait_matrix_dots(llvm::IRBuilder<> &, const std::vector<llvm::Value *> &) {
  internal_error("GPU lowering: " + info_.name + " has no asynchronous matrix instructions");
}
namespace {
[[noreturn]] void no_tensor_copy(const TargetInfo &info) { internal_error("GPU lowering: " + info.name + " has no tensor memory accelerator"); }
}  // namespace
void GpuTarget::barrier_init(llvm::IRBuilder<> &, llvm::Value *, int) { no_tensor_copy(info_); }
void GpuTarget::barrier_init_fence(llvm::IRBuilder<> &) { no_tensor_copy(info_); }
void GpuTarget::barrier_expect(llvm::IRBuilder<> &, llvm::Value *, llvm::Value *) { no_tensor_copy(info_); }
llvm::Value *GpuTarget::barrier_phase_done(llvm::IRBuilder<> &, llvm::Value *, llvm::Value *) { no_tensor_copy(info_); }
void GpuTarget::barrier_invalidate(llvm::IRBuilder<> &, llvm::Value *) { no_tensor_copy(info_); }
void GpuTarget::tensor_copy_2d(llvm::IRBuilder<> &, llvm::Value *, llvm::Value *, llvm::Value *, llvm::Value *, llvm::Value *) { no_tensor_copy(info_); }
void GpuTarget::tensor_copy_3d(llvm::IRBuilder<> &, llvm::Value *, llvm::Value *, llvm::Value *, llvm::Value *, llvm::Value *, llvm::Value *) {
  no_tensor_copy(info_);
}
void GpuTarget::tensor_store_2d(llvm::IRBuilder<> &, llvm::Value *, llvm::Value *, llvm::Value *, llvm::Value *) { no_tensor_copy(info_); }
void GpuTarget::tensor_store_3d(llvm::IRBuilder<> &, llvm::Value *, llvm::Value *, llvm::Value *, llvm::Value *, llvm::Value *) { no_tensor_copy(info_); }
void GpuTarget::tensor_store_commit(llvm::IRBuilder<> &) { no_tensor_copy(info_); }
void GpuTarget::tensor_store_wait_read(llvm::IRBuilder<> &) { no_tensor_copy(info_); }
void GpuTarget::async_proxy_fence(llvm::IRBuilder<> &) { internal_error("GPU lowering: " + info_.name + " has no matrix instructions reading shared memory by descriptor"); }

llvm::Value *GpuTarget::e4m3_to_f32(llvm::IRBuilder<> &b, llvm::Value *byte) { return emit_e4m3_to_f32(b, byte); }
llvm::Value *GpuTarget::f32_to_e4m3(llvm::IRBuilder<> &b, llvm::Value *x) { return emit_f32_to_e4m3(b, x); }
llvm::Value *GpuTarget::e4m3_byte_of(llvm::Value *v) { return e4m3_byte_of_widened(v); }

llvm::Value *GpuTarget::dot4(llvm::IRBuilder<> &b, llvm::Value *a, llvm::Value *bw, llvm::Value *acc, bool a_signed, bool b_signed) {
  llvm::Value *sum = acc;
  for (int t = 0; t < 4; ++t) {
    auto byte = [&](llvm::Value *word, bool is_signed) {
      llvm::Value *x = b.CreateTrunc(b.CreateLShr(word, uint64_t(8 * t)), b.getInt8Ty());
      return is_signed ? b.CreateSExt(x, b.getInt32Ty()) : b.CreateZExt(x, b.getInt32Ty());
    };
    sum = b.CreateAdd(sum, b.CreateMul(byte(a, a_signed), byte(bw, b_signed)));
  }
  return sum;
}

llvm::Value *shuffle_xor_any(GpuTarget &target, llvm::IRBuilder<> &b, llvm::Value *v, int lane_mask) {
  llvm::Type *ty = v->getType();
  if (ty->isFloatTy() || ty->isIntegerTy(32)) return target.shuffle_xor(b, v, lane_mask);
  if (ty->isIntegerTy(64)) {
    llvm::Value *lo = target.shuffle_xor(b, b.CreateTrunc(v, b.getInt32Ty()), lane_mask);
    llvm::Value *hi = target.shuffle_xor(b, b.CreateTrunc(b.CreateLShr(v, 32), b.getInt32Ty()), lane_mask);
    return b.CreateOr(b.CreateZExt(lo, ty), b.CreateShl(b.CreateZExt(hi, ty), 32));
  }
  return b.CreateTrunc(target.shuffle_xor(b, b.CreateZExt(v, b.getInt32Ty()), lane_mask), ty);
}

}  // namespace kdsl::codegen::gpu
