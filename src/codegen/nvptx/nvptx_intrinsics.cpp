// nvptx_intrinsics.cpp - NVVM intrinsics and libdevice calls used by the GPU lowering
#include "codegen/nvptx/nvptx_intrinsics.h"

#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include <kdsl/error.h>

namespace kdsl::codegen::nvptx {
namespace {

llvm::Value *libdevice(llvm::IRBuilder<> &b, llvm::Module &m, const char *name, std::vector<llvm::Value *> args) {
  std::vector<llvm::Type *> types(args.size(), b.getFloatTy());
  llvm::FunctionCallee f = m.getOrInsertFunction(name, llvm::FunctionType::get(b.getFloatTy(), types, false));
  return b.CreateCall(f, args);
}

llvm::Value *ex2(llvm::IRBuilder<> &b, llvm::Value *x) { return b.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz_f, {}, {x}); }

}  // namespace

llvm::Value *thread_id(llvm::IRBuilder<> &b) { return b.CreateIntrinsic(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {}); }

llvm::Value *block_id(llvm::IRBuilder<> &b, int axis) {
  static const llvm::Intrinsic::ID ids[] = {llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y,
                                            llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z};
  return b.CreateIntrinsic(ids[axis], {}, {});
}

llvm::Value *grid_size(llvm::IRBuilder<> &b, int axis) {
  static const llvm::Intrinsic::ID ids[] = {llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x, llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y,
                                            llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z};
  return b.CreateIntrinsic(ids[axis], {}, {});
}

void barrier(llvm::IRBuilder<> &b) { b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); }

llvm::Value *shuffle_xor(llvm::IRBuilder<> &b, llvm::Value *v, int lane_mask) {
  auto id = v->getType()->isFloatTy() ? llvm::Intrinsic::nvvm_shfl_sync_bfly_f32 : llvm::Intrinsic::nvvm_shfl_sync_bfly_i32;
  return b.CreateIntrinsic(id, {}, {b.getInt32(-1), v, b.getInt32(lane_mask), b.getInt32(0x1f)});
}

llvm::Value *emit_math(llvm::IRBuilder<> &b, llvm::Module &m, OpKind kind, llvm::Value *x, llvm::Value *y) {
  auto f32 = [&](double v) { return llvm::ConstantFP::get(b.getFloatTy(), v); };
  switch (kind) {
    // ex2.approx: 2 ulp over the range softmax and attention use; the multiply by log2(e)
    // is where Triton's exp loses its last bits too.
    case OpKind::Exp: return ex2(b, b.CreateFMul(x, f32(1.4426950408889634)));
    case OpKind::Exp2: return ex2(b, x);
    case OpKind::Sigmoid: return b.CreateFDiv(f32(1.0), b.CreateFAdd(f32(1.0), ex2(b, b.CreateFMul(x, f32(-1.4426950408889634)))));
    case OpKind::Sqrt: return b.CreateIntrinsic(llvm::Intrinsic::sqrt, {b.getFloatTy()}, {x});
    case OpKind::Log: return libdevice(b, m, "__nv_logf", {x});
    case OpKind::Log2: return libdevice(b, m, "__nv_log2f", {x});
    case OpKind::Rsqrt: return libdevice(b, m, "__nv_rsqrtf", {x});
    case OpKind::Sin: return libdevice(b, m, "__nv_sinf", {x});
    case OpKind::Cos: return libdevice(b, m, "__nv_cosf", {x});
    case OpKind::Tanh: return libdevice(b, m, "__nv_tanhf", {x});
    case OpKind::Rem: return libdevice(b, m, "__nv_fmodf", {x, y});
    default: internal_error(std::string("nvptx: no math lowering for ") + ir::op_name(kind));
  }
}

void mark_kernel(llvm::Function *f, int threads) {
  llvm::Module &m = *f->getParent();
  llvm::LLVMContext &ctx = m.getContext();
  f->setCallingConv(llvm::CallingConv::PTX_Kernel);
  auto *i32 = llvm::Type::getInt32Ty(ctx);
  llvm::NamedMDNode *annotations = m.getOrInsertNamedMetadata("nvvm.annotations");
  auto entry = [&](const char *key, int value) {
    llvm::Metadata *fields[] = {llvm::ValueAsMetadata::get(f), llvm::MDString::get(ctx, key),
                                llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(i32, value))};
    annotations->addOperand(llvm::MDNode::get(ctx, fields));
  };
  entry("kernel", 1);
  entry("maxntidx", threads);
}

}  // namespace kdsl::codegen::nvptx
