// amdgpu_target.h - the GPU lowering's hooks for AMD (amdgcn): workitem/workgroup ids, s_barrier, ds_bpermute, ocml math, amdgpu_kernel, MFMA
#pragma once
#include "codegen/gpu/gpu_target.h"

namespace kdsl::codegen::amdgpu {

// AMDGPU's address spaces: global 1, LDS (shared) 3, constant 4 (the dispatch packet).
constexpr unsigned kGlobalAddressSpace = 1;
constexpr unsigned kLocalAddressSpace = 3;
constexpr unsigned kConstantAddressSpace = 4;

// The lowering's hooks on amdgcn-amd-amdhsa, for wave64 (CDNA) and wave32 (RDNA) alike:
//   ids       llvm.amdgcn.workitem.id.x, workgroup.id.{x,y,z}; the grid's extent in
//             workgroups from the HSA dispatch packet (grid size in work-items over the
//             workgroup size);
//   barrier   s_barrier between workgroup-scope release and acquire fences, so LDS writes
//             before it are seen after it (what HIP's __syncthreads compiles to);
//   shuffles  ds_bpermute_b32 across the whole wave (any lane mask, 64 lanes included);
//   math      exp/exp2/log/log2/sqrt as LLVM intrinsics the backend lowers to v_exp_f32,
//             v_log_f32, v_sqrt_f32 with their range fix-ups (no library); the rest from
//             ROCm's ocml (__ocml_*_f32), linked by link_device_libs when called;
//   kernels   the amdgpu_kernel calling convention (arguments in the kernarg segment),
//             amdgpu-flat-work-group-size 1..threads.
// device_print is refused (printf on AMD needs the HIP runtime's hostcall buffer, which
// kdsl does not set up); device_assert traps (s_trap), so the launch fails, without the
// message. dot on CDNA's matrix cores (gfx90a, gfx942: the MFMA instructions target_info
// lists) is lower_mfma.cpp's; RDNA (gfx1100) lists none, so its dots run on FMAs. dot4 is
// v_dot4_i32_i8 / v_dot4_u32_u8 on gfx9 (mixed signs through the signed one, below) and
// v_dot4_i32_iu8 on gfx11, which takes each operand's signedness.
class AmdgpuTarget final : public gpu::GpuTarget {
 public:
  using GpuTarget::GpuTarget;
  unsigned global_address_space() const override { return kGlobalAddressSpace; }
  unsigned shared_address_space() const override { return kLocalAddressSpace; }
  llvm::Value *thread_id(llvm::IRBuilder<> &b) override;
  llvm::Value *block_id(llvm::IRBuilder<> &b, int axis) override;
  llvm::Value *grid_size(llvm::IRBuilder<> &b, int axis) override;
  void barrier(llvm::IRBuilder<> &b) override;
  llvm::Value *shuffle_xor(llvm::IRBuilder<> &b, llvm::Value *v, int lane_mask) override;
  llvm::Value *math(llvm::IRBuilder<> &b, llvm::Module &m, OpKind kind, llvm::Value *x, llvm::Value *y) override;
  void mark_kernel(llvm::Function *f, int threads) override;
  void print(llvm::IRBuilder<> &b, llvm::Module &m, const std::string &format, const std::vector<llvm::Value *> &args) override;
  void assert_fail(llvm::IRBuilder<> &b, llvm::Module &m, const std::string &format, const std::vector<llvm::Value *> &args,
                   const std::string &message, const std::string &kernel) override;
  void matrix_dot(gpu::GpuLowering &lowering, const ir::Op &op, const MatrixInstruction &instruction) override;
  llvm::Value *dot4(llvm::IRBuilder<> &b, llvm::Value *a, llvm::Value *bw, llvm::Value *acc, bool a_signed, bool b_signed) override;

 private:
  llvm::Value *lane_id(llvm::IRBuilder<> &b);
};

// dot on MFMA (lower_mfma.cpp): operands staged in LDS, fragment reads, MFMA into the
// accumulator layout (mfma_fragments.h).
void emit_mfma_dot(gpu::GpuLowering &g, const ir::Op &op, const MatrixInstruction &instruction);

}  // namespace kdsl::codegen::amdgpu
