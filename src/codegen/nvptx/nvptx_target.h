// nvptx_target.h - the GPU lowering's hooks for NVIDIA: NVVM special registers, bar.sync, shfl.sync, libdevice math, vprintf, mma.sync, wgmma
#pragma once
#include "codegen/gpu/gpu_target.h"

namespace kdsl::codegen::nvptx {

// Global memory is address space 1, shared memory 3 (NVPTX's numbering); the instructions
// are nvptx_intrinsics.h's; dot on a matrix instruction is lower_mma.cpp's ldmatrix and
// mma.sync, or lower_wgmma.cpp's warpgroup MMA (sm_90a); async copies are cp.async (sm_80+).
class NvptxTarget final : public gpu::GpuTarget {
 public:
  using GpuTarget::GpuTarget;
  unsigned global_address_space() const override;
  unsigned shared_address_space() const override;
  llvm::Value *thread_id(llvm::IRBuilder<> &b) override;
  llvm::Value *block_id(llvm::IRBuilder<> &b, int axis) override;
  llvm::Value *grid_size(llvm::IRBuilder<> &b, int axis) override;
  void barrier(llvm::IRBuilder<> &b) override;
  llvm::Value *shuffle_xor(llvm::IRBuilder<> &b, llvm::Value *v, int lane_mask) override;
  llvm::Value *math(llvm::IRBuilder<> &b, llvm::Module &m, OpKind kind, llvm::Value *x, llvm::Value *y) override;
  llvm::Value *divide(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y) override;
  llvm::Value *e4m3_to_f32(llvm::IRBuilder<> &b, llvm::Value *byte) override;
  llvm::Value *f32_to_e4m3(llvm::IRBuilder<> &b, llvm::Value *x) override;
  llvm::Value *e4m3_byte_of(llvm::Value *v) override;
  void mark_kernel(llvm::Function *f, int threads) override;
  void print(llvm::IRBuilder<> &b, llvm::Module &m, const std::string &format, const std::vector<llvm::Value *> &args) override;
  void assert_fail(llvm::IRBuilder<> &b, llvm::Module &m, const std::string &format, const std::vector<llvm::Value *> &args,
                   const std::string &message, const std::string &kernel) override;
  void matrix_dot(gpu::GpuLowering &lowering, const ir::Op &op, const MatrixInstruction &instruction) override;
  llvm::Value *dot4(llvm::IRBuilder<> &b, llvm::Value *a, llvm::Value *bw, llvm::Value *acc, bool a_signed, bool b_signed) override;
  void async_copy_16(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *global, llvm::Value *src_bytes) override;
  void async_commit(llvm::IRBuilder<> &b) override;
  void async_wait(llvm::IRBuilder<> &b, int groups) override;
  void async_proxy_fence(llvm::IRBuilder<> &b) override;
  void barrier_init(llvm::IRBuilder<> &b, llvm::Value *barrier, int count) override;
  void barrier_init_fence(llvm::IRBuilder<> &b) override;
  void barrier_expect(llvm::IRBuilder<> &b, llvm::Value *barrier, llvm::Value *bytes) override;
  llvm::Value *barrier_phase_done(llvm::IRBuilder<> &b, llvm::Value *barrier, llvm::Value *parity) override;
  void barrier_invalidate(llvm::IRBuilder<> &b, llvm::Value *barrier) override;
  void tensor_copy_2d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row,
                      llvm::Value *barrier) override;
  void tensor_copy_3d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row, llvm::Value *plane,
                      llvm::Value *barrier) override;
  void tensor_store_2d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row) override;
  void tensor_store_3d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row, llvm::Value *plane) override;
  void tensor_store_commit(llvm::IRBuilder<> &b) override;
  void tensor_store_wait_read(llvm::IRBuilder<> &b) override;
  std::vector<llvm::Value *> wait_matrix_dots(llvm::IRBuilder<> &b, const std::vector<llvm::Value *> &acc) override;
};

// dot on tensor cores (lower_mma.cpp): operands staged in shared memory, ldmatrix
// fragments, mma.sync into the accumulator layout.
void emit_mma_dot(gpu::GpuLowering &g, const ir::Op &op, const MatrixInstruction &instruction);
// dot on Hopper's warpgroup MMA (lower_wgmma.cpp): operands staged as core matrices,
// wgmma.mma_async through shared-memory descriptors.
void emit_wgmma_dot(gpu::GpuLowering &g, const ir::Op &op, const MatrixInstruction &instruction);

// The 4 words of an m16n8k16 A fragment (mma.sync's; per warp, wgmma's register A) for A held
// in a 16-bit dot's accumulator layout, from `regs` (A's registers): the m tile whose rows start
// `row0` past this thread's first row, k step s, which is the layout's n8 tiles 2 s and 2 s + 1
// (so A's warps must hold every column: warps_per_cta[1] == 1). Word j packs row g + 8 (j & 1)
// of tile 2 s + (j >> 1): elements 2 (j & 1) and 2 (j & 1) + 1 of its C fragment, the lower in
// the low bits.
std::vector<llvm::Value *> a_fragment_from_accumulator(gpu::GpuLowering &g, ir::ValueId a, const std::vector<llvm::Value *> &regs, int64_t row0, int64_t s);

}  // namespace kdsl::codegen::nvptx
