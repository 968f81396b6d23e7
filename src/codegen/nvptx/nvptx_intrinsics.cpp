// nvptx_intrinsics.cpp - NVVM intrinsics and libdevice calls used by the GPU lowering
#include "codegen/nvptx/nvptx_intrinsics.h"

#include <algorithm>

#include <llvm/IR/InlineAsm.h>
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

std::vector<llvm::Value *> ldmatrix(llvm::IRBuilder<> &b, llvm::Value *row_address, int count, bool trans) {
  llvm::Intrinsic::ID id = count == 4 ? (trans ? llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16 : llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16)
                                      : (trans ? llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16 : llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_b16);
  if (count != 2 && count != 4) internal_error("ldmatrix: count must be 2 or 4");
  llvm::Value *loaded = b.CreateIntrinsic(id, {row_address->getType()}, {row_address});  // overloaded on the pointer: .p3 is .shared
  std::vector<llvm::Value *> regs;
  for (int i = 0; i < count; ++i) regs.push_back(b.CreateExtractValue(loaded, unsigned(i)));
  return regs;
}

void cp_async_16(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *global, llvm::Value *src_bytes) {
  b.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16_s, {}, {shared, global, src_bytes});
}
void cp_async_commit_group(llvm::IRBuilder<> &b) { b.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {}); }
void cp_async_wait_group(llvm::IRBuilder<> &b, int n) { b.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {}, {b.getInt32(uint32_t(n))}); }

std::vector<llvm::Value *> mma_sync(llvm::IRBuilder<> &b, const MatrixInstruction &mi, const std::vector<llvm::Value *> &a,
                                    const std::vector<llvm::Value *> &bv, const std::vector<llvm::Value *> &c) {
  llvm::Intrinsic::ID id;
  llvm::Type *operand = b.getInt32Ty();
  if (mi.m == 16 && mi.n == 8 && mi.k == 16 && mi.a == DType::F16 && mi.b == DType::F16 && mi.acc == DType::F32) {
    id = llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32;  // named by its D and C types
    operand = llvm::FixedVectorType::get(b.getHalfTy(), 2);
  } else if (mi.m == 16 && mi.n == 8 && mi.k == 16 && mi.a == DType::BF16 && mi.b == DType::BF16 && mi.acc == DType::F32) {
    id = llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16;
  } else if (mi.m == 16 && mi.n == 8 && mi.k == 32 && mi.a == DType::I8 && mi.b == DType::I8 && mi.acc == DType::I32) {
    id = llvm::Intrinsic::nvvm_mma_m16n8k32_row_col_s8;
  } else {
    internal_error(std::string("nvptx: no mma.sync intrinsic for ") + mi.name);
  }
  std::vector<llvm::Value *> args;
  for (llvm::Value *x : a) args.push_back(b.CreateBitCast(x, operand));
  for (llvm::Value *x : bv) args.push_back(b.CreateBitCast(x, operand));
  args.insert(args.end(), c.begin(), c.end());
  llvm::Value *d = b.CreateIntrinsic(id, {}, args);
  std::vector<llvm::Value *> out;
  for (unsigned i = 0; i < c.size(); ++i) out.push_back(b.CreateExtractValue(d, i));
  return out;
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
    case OpKind::Erf: return libdevice(b, m, "__nv_erff", {x});
    case OpKind::Pow: return libdevice(b, m, "__nv_powf", {x, y});
    case OpKind::Rem: return libdevice(b, m, "__nv_fmodf", {x, y});
    default: internal_error(std::string("nvptx: no math lowering for ") + ir::op_name(kind));
  }
}

llvm::Value *dp4a(llvm::IRBuilder<> &b, llvm::Value *a, llvm::Value *bw, llvm::Value *acc, bool a_signed, bool b_signed) {
  llvm::Type *i32 = b.getInt32Ty();
  auto *type = llvm::FunctionType::get(i32, {i32, i32, i32}, false);
  std::string text = std::string("dp4a.") + (a_signed ? "s32" : "u32") + "." + (b_signed ? "s32" : "u32") + " $0, $1, $2, $3;";
  return b.CreateCall(llvm::InlineAsm::get(type, text, "=r,r,r,r", /*hasSideEffects=*/false), {a, bw, acc});
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
  // Registers: what one block of `threads` may have (65536 a multiprocessor, 255 a thread at
  // most). Without a budget ptxas sizes kernels of 128 threads to 64 registers for occupancy
  // and spills rather than exceed it (bench/RESULTS.md: with FMA contraction a test kernel
  // spilled 4 bytes at 64 registers and used 72 under .maxnreg).
  entry("maxnreg", std::min(255, 65536 / std::max(threads, 1)));
}

}  // namespace kdsl::codegen::nvptx
