// nvptx_target.cpp - NVIDIA's hooks for the GPU lowering, over nvptx_intrinsics; device_print through CUDA's vprintf, device_assert through __assertfail
#include "codegen/nvptx/nvptx_target.h"

#include "codegen/nvptx/nvptx_intrinsics.h"

namespace kdsl::codegen::nvptx {
namespace {

// A NUL-terminated string in global memory, as a generic pointer (what vprintf and
// __assertfail take).
llvm::Value *global_string(llvm::IRBuilder<> &b, llvm::Module &m, const std::string &text, const char *name) {
  llvm::GlobalVariable *g = b.CreateGlobalString(text, name, kGlobalAddressSpace, &m);
  return b.CreateAddrSpaceCast(g, b.getPtrTy());
}

// vprintf(format, buffer): the arguments laid out as a C struct of their types on the stack.
void emit_vprintf(llvm::IRBuilder<> &b, llvm::Module &m, const std::string &format, const std::vector<llvm::Value *> &args) {
  llvm::Function *f = b.GetInsertBlock()->getParent();
  std::vector<llvm::Type *> types;
  for (llvm::Value *a : args) types.push_back(a->getType());
  llvm::StructType *layout = llvm::StructType::get(b.getContext(), types);
  llvm::IRBuilder<> entry(&f->getEntryBlock(), f->getEntryBlock().begin());
  llvm::AllocaInst *buffer = entry.CreateAlloca(layout, nullptr, "printf.args");
  for (size_t i = 0; i < args.size(); ++i) b.CreateStore(args[i], b.CreateStructGEP(layout, buffer, unsigned(i)));
  llvm::FunctionCallee vprintf = m.getOrInsertFunction("vprintf", llvm::FunctionType::get(b.getInt32Ty(), {b.getPtrTy(), b.getPtrTy()}, false));
  b.CreateCall(vprintf, {global_string(b, m, format, "printf.format"), buffer});
}

}  // namespace

unsigned NvptxTarget::global_address_space() const { return kGlobalAddressSpace; }
unsigned NvptxTarget::shared_address_space() const { return kSharedAddressSpace; }
llvm::Value *NvptxTarget::thread_id(llvm::IRBuilder<> &b) { return nvptx::thread_id(b); }
llvm::Value *NvptxTarget::block_id(llvm::IRBuilder<> &b, int axis) { return nvptx::block_id(b, axis); }
llvm::Value *NvptxTarget::grid_size(llvm::IRBuilder<> &b, int axis) { return nvptx::grid_size(b, axis); }
void NvptxTarget::barrier(llvm::IRBuilder<> &b) { nvptx::barrier(b); }
llvm::Value *NvptxTarget::shuffle_xor(llvm::IRBuilder<> &b, llvm::Value *v, int lane_mask) { return nvptx::shuffle_xor(b, v, lane_mask); }
llvm::Value *NvptxTarget::math(llvm::IRBuilder<> &b, llvm::Module &m, OpKind kind, llvm::Value *x, llvm::Value *y) { return emit_math(b, m, kind, x, y); }
llvm::Value *NvptxTarget::divide(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y) { return div_full(b, x, y); }
// sm_89+ converts fp8 by cvt: 2 instructions to widen (cvt.rn.f16x2.e4m3x2, cvt.f32.f16) and 1
// to round, where the integer IR takes about a dozen each.
llvm::Value *NvptxTarget::e4m3_to_f32(llvm::IRBuilder<> &b, llvm::Value *byte) {
  return info().fp8_conversions ? nvptx::e4m3_to_f32(b, byte) : GpuTarget::e4m3_to_f32(b, byte);
}
llvm::Value *NvptxTarget::f32_to_e4m3(llvm::IRBuilder<> &b, llvm::Value *x) {
  return info().fp8_conversions ? nvptx::f32_to_e4m3(b, x) : GpuTarget::f32_to_e4m3(b, x);
}
llvm::Value *NvptxTarget::e4m3_byte_of(llvm::Value *v) { return info().fp8_conversions ? e4m3_byte_of_cvt(v) : GpuTarget::e4m3_byte_of(v); }
void NvptxTarget::mark_kernel(llvm::Function *f, int threads) { nvptx::mark_kernel(f, threads); }
llvm::Value *NvptxTarget::dot4(llvm::IRBuilder<> &b, llvm::Value *a, llvm::Value *bw, llvm::Value *acc, bool a_signed, bool b_signed) {
  return nvptx::dp4a(b, a, bw, acc, a_signed, b_signed);
}

void NvptxTarget::print(llvm::IRBuilder<> &b, llvm::Module &m, const std::string &format, const std::vector<llvm::Value *> &args) {
  emit_vprintf(b, m, format, args);
}

// CUDA's assert: the kernel stops and the launch fails with an assert error (the driver
// prints the message).
void NvptxTarget::assert_fail(llvm::IRBuilder<> &b, llvm::Module &m, const std::string &format, const std::vector<llvm::Value *> &args,
                              const std::string &message, const std::string &kernel) {
  emit_vprintf(b, m, format, args);
  llvm::FunctionCallee assertfail = m.getOrInsertFunction(
      "__assertfail", llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy(), b.getPtrTy(), b.getInt32Ty(), b.getPtrTy(), b.getInt64Ty()}, false));
  b.CreateCall(assertfail, {global_string(b, m, message, "assert.message"), global_string(b, m, "kdsl kernel", "assert.file"), b.getInt32(0),
                            global_string(b, m, kernel, "assert.function"), b.getInt64(1)});
}

void NvptxTarget::matrix_dot(gpu::GpuLowering &lowering, const ir::Op &op, const MatrixInstruction &instruction) {
  if (instruction.descriptor_operands) emit_wgmma_dot(lowering, op, instruction);
  else emit_mma_dot(lowering, op, instruction);
}

void NvptxTarget::async_copy_16(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *global, llvm::Value *src_bytes) {
  cp_async_16(b, shared, global, src_bytes);
}
void NvptxTarget::async_commit(llvm::IRBuilder<> &b) { cp_async_commit_group(b); }
void NvptxTarget::async_wait(llvm::IRBuilder<> &b, int groups) { cp_async_wait_group(b, groups); }
void NvptxTarget::async_proxy_fence(llvm::IRBuilder<> &b) { fence_proxy_async(b); }
void NvptxTarget::barrier_init(llvm::IRBuilder<> &b, llvm::Value *barrier, int count) { mbarrier_init(b, barrier, count); }
void NvptxTarget::barrier_init_fence(llvm::IRBuilder<> &b) { mbarrier_init_fence(b); }
void NvptxTarget::barrier_expect(llvm::IRBuilder<> &b, llvm::Value *barrier, llvm::Value *bytes) { mbarrier_arrive_expect_tx(b, barrier, bytes); }
llvm::Value *NvptxTarget::barrier_phase_done(llvm::IRBuilder<> &b, llvm::Value *barrier, llvm::Value *parity) {
  return mbarrier_try_wait_parity(b, barrier, parity);
}
void NvptxTarget::barrier_invalidate(llvm::IRBuilder<> &b, llvm::Value *barrier) { mbarrier_inval(b, barrier); }
void NvptxTarget::tensor_copy_2d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row,
                                 llvm::Value *barrier) {
  tma_load_2d(b, shared, tensor_map, col, row, barrier);
}
void NvptxTarget::tensor_copy_3d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row, llvm::Value *plane,
                                 llvm::Value *barrier) {
  tma_load_3d(b, shared, tensor_map, col, row, plane, barrier);
}
void NvptxTarget::tensor_store_2d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row) {
  tma_store_2d(b, shared, tensor_map, col, row);
}
void NvptxTarget::tensor_store_3d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row, llvm::Value *plane) {
  tma_store_3d(b, shared, tensor_map, col, row, plane);
}
void NvptxTarget::tensor_store_commit(llvm::IRBuilder<> &b) { bulk_commit_group(b); }
void NvptxTarget::tensor_store_wait_read(llvm::IRBuilder<> &b) { bulk_wait_group_read(b); }
std::vector<llvm::Value *> NvptxTarget::wait_matrix_dots(llvm::IRBuilder<> &b, const std::vector<llvm::Value *> &acc) { return wgmma_wait_group(b, 0, acc); }

}  // namespace kdsl::codegen::nvptx
