// nvptx_intrinsics.cpp - NVVM intrinsics and libdevice calls used by the GPU lowering
#include "codegen/nvptx/nvptx_intrinsics.h"

#include <fmt/format.h>

#include <algorithm>

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PatternMatch.h>

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
  } else if (mi.m == 16 && mi.n == 8 && mi.k == 8 && mi.tf32 && mi.acc == DType::F32) {
    id = llvm::Intrinsic::nvvm_mma_m16n8k8_row_col_tf32;  // f32 bits; the low 13 of each ignored
  } else if (mi.m == 16 && mi.n == 8 && mi.k == 32 && mi.a == DType::F8E4M3 && mi.b == DType::F8E4M3 && mi.acc == DType::F32) {
    id = llvm::Intrinsic::not_intrinsic;  // kMmaE4m3Text
  } else {
    internal_error(std::string("nvptx: no mma.sync intrinsic for ") + mi.name);
  }
  std::vector<llvm::Value *> args;
  for (llvm::Value *x : a) args.push_back(b.CreateBitCast(x, operand));
  for (llvm::Value *x : bv) args.push_back(b.CreateBitCast(x, operand));
  args.insert(args.end(), c.begin(), c.end());
  llvm::Value *d = nullptr;
  if (id == llvm::Intrinsic::not_intrinsic) {
    llvm::Type *f32 = b.getFloatTy(), *i32 = b.getInt32Ty();
    auto *type = llvm::FunctionType::get(llvm::StructType::get(b.getContext(), {f32, f32, f32, f32}), {i32, i32, i32, i32, i32, i32, f32, f32, f32, f32}, false);
    d = b.CreateCall(llvm::InlineAsm::get(type, kMmaE4m3Text, "=f,=f,=f,=f,r,r,r,r,r,r,f,f,f,f", /*hasSideEffects=*/false), args);
  } else {
    d = b.CreateIntrinsic(id, {}, args);
  }
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

llvm::Value *div_full(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y) {
  llvm::Type *f32 = b.getFloatTy();
  return b.CreateCall(llvm::InlineAsm::get(llvm::FunctionType::get(f32, {f32, f32}, false), "div.full.f32 $0, $1, $2;", "=f,f,f", /*hasSideEffects=*/false), {x, y});
}

llvm::Value *dp4a(llvm::IRBuilder<> &b, llvm::Value *a, llvm::Value *bw, llvm::Value *acc, bool a_signed, bool b_signed) {
  llvm::Type *i32 = b.getInt32Ty();
  auto *type = llvm::FunctionType::get(i32, {i32, i32, i32}, false);
  std::string text = std::string("dp4a.") + (a_signed ? "s32" : "u32") + "." + (b_signed ? "s32" : "u32") + " $0, $1, $2, $3;";
  return b.CreateCall(llvm::InlineAsm::get(type, text, "=r,r,r,r", /*hasSideEffects=*/false), {a, bw, acc});
}

llvm::Value *e4m3_to_f32(llvm::IRBuilder<> &b, llvm::Value *byte) {
  auto *type = llvm::FunctionType::get(b.getInt32Ty(), {b.getInt16Ty()}, false);
  llvm::Value *pair = b.CreateCall(llvm::InlineAsm::get(type, kE4m3x2ToF16x2Text, "=r,h", /*hasSideEffects=*/false), {b.CreateZExt(byte, b.getInt16Ty())});
  return b.CreateFPExt(b.CreateBitCast(b.CreateTrunc(pair, b.getInt16Ty()), b.getHalfTy()), b.getFloatTy());
}

llvm::Value *f32_to_e4m3(llvm::IRBuilder<> &b, llvm::Value *x) {
  auto *type = llvm::FunctionType::get(b.getInt16Ty(), {b.getFloatTy(), b.getFloatTy()}, false);
  return b.CreateTrunc(b.CreateCall(llvm::InlineAsm::get(type, kF32x2ToE4m3x2Text, "=h,f,f", /*hasSideEffects=*/false), {x, x}), b.getInt8Ty());
}

llvm::Value *e4m3_byte_of_cvt(llvm::Value *v) {
  using namespace llvm::PatternMatch;
  llvm::Value *pair = nullptr, *byte = nullptr;
  if (!match(v, m_FPExt(m_BitCast(m_Trunc(m_Value(pair)))))) return nullptr;
  auto *call = llvm::dyn_cast<llvm::CallInst>(pair);
  if (!call || !call->isInlineAsm() || llvm::cast<llvm::InlineAsm>(call->getCalledOperand())->getAsmString() != kE4m3x2ToF16x2Text) return nullptr;
  if (!match(call->getArgOperand(0), m_ZExt(m_Value(byte))) || !byte->getType()->isIntegerTy(8)) return nullptr;
  return byte;
}

namespace {

// Inline PTX with side effects and a memory clobber (it reads or orders shared memory) whose
// outputs are `values` (f32 or i32) passed through: "=f" or "=r" outputs tied to the inputs.
std::vector<llvm::Value *> through_asm(llvm::IRBuilder<> &b, const std::string &text, const std::vector<llvm::Value *> &values,
                                       const std::vector<llvm::Value *> &leading = {}, const std::string &leading_constraints = "") {
  size_t n = values.size();
  std::vector<llvm::Type *> outs, ins;
  std::string constraints;
  for (llvm::Value *v : values) {
    outs.push_back(v->getType());
    constraints += v->getType()->isFloatTy() ? "=f," : "=r,";
  }
  constraints += leading_constraints;
  for (llvm::Value *v : leading) ins.push_back(v->getType());
  for (size_t i = 0; i < n; ++i) {
    ins.push_back(outs[i]);
    constraints += std::to_string(i) + ",";
  }
  constraints += "~{memory}";
  llvm::Type *ret = n == 0 ? b.getVoidTy() : n == 1 ? outs[0] : llvm::StructType::get(b.getContext(), outs);
  std::vector<llvm::Value *> args = leading;
  args.insert(args.end(), values.begin(), values.end());
  llvm::CallInst *call = b.CreateCall(llvm::InlineAsm::get(llvm::FunctionType::get(ret, ins, false), text, constraints, /*hasSideEffects=*/true), args);
  if (n == 1) return {call};
  std::vector<llvm::Value *> result;
  for (size_t i = 0; i < n; ++i) result.push_back(b.CreateExtractValue(call, unsigned(i)));
  return result;
}

// "$0, $1, .., $(n/2 - 1)": the accumulator operands of an m64n{n} wgmma's text.
std::string wgmma_accumulators(int n) {
  std::string d;
  for (int i = 0; i < n / 2; ++i) d += (i ? ", $" : "$") + std::to_string(i);
  return d;
}

}  // namespace

llvm::Value *wgmma_descriptor(llvm::IRBuilder<> &b, llvm::Value *shared_address, int64_t stride_bytes, int swizzle_mode, int64_t leading_bytes) {
  llvm::Value *address = b.CreatePtrToInt(shared_address, b.getInt64Ty());
  llvm::Value *start = b.CreateLShr(b.CreateAnd(address, b.getInt64(0x3FFFF)), 4);  // bits 0-13: the address / 16
  // Bits 16-29: the leading offset / 16; 32-45: the stride offset / 16; 49-51: the base
  // offset, 0 (tiles start on the swizzle's 8-row boundary); 62-63: the swizzle mode.
  uint64_t fields = (uint64_t(leading_bytes >> 4) & 0x3FFF) << 16 | (uint64_t(stride_bytes >> 4) & 0x3FFF) << 32 | uint64_t(swizzle_mode & 3) << 62;
  return b.CreateOr(start, b.getInt64(fields));
}

void fence_proxy_async(llvm::IRBuilder<> &b) { through_asm(b, "fence.proxy.async.shared::cta;", {}); }
std::vector<llvm::Value *> wgmma_fence(llvm::IRBuilder<> &b, const std::vector<llvm::Value *> &acc) { return through_asm(b, "wgmma.fence.sync.aligned;", acc); }
std::vector<llvm::Value *> wgmma_wait_group(llvm::IRBuilder<> &b, int groups, const std::vector<llvm::Value *> &acc) {
  return through_asm(b, "wgmma.wait_group.sync.aligned " + std::to_string(groups) + ";", acc);
}
void wgmma_commit_group(llvm::IRBuilder<> &b) { through_asm(b, "wgmma.commit_group.sync.aligned;", {}); }

namespace {
void effect_asm(llvm::IRBuilder<> &b, const char *text, const std::string &constraints, const std::vector<llvm::Value *> &args) {
  std::vector<llvm::Type *> types;
  for (llvm::Value *a : args) types.push_back(a->getType());
  b.CreateCall(llvm::InlineAsm::get(llvm::FunctionType::get(b.getVoidTy(), types, false), text, constraints, /*hasSideEffects=*/true), args);
}
}  // namespace

void mbarrier_init(llvm::IRBuilder<> &b, llvm::Value *barrier, int count) { effect_asm(b, kMbarrierInitText, "l,r,~{memory}", {barrier, b.getInt32(uint32_t(count))}); }
void mbarrier_init_fence(llvm::IRBuilder<> &b) { effect_asm(b, kMbarrierInitFenceText, "~{memory}", {}); }
void mbarrier_arrive_expect_tx(llvm::IRBuilder<> &b, llvm::Value *barrier, llvm::Value *bytes) {
  effect_asm(b, kMbarrierExpectTxText, "l,r,~{memory}", {barrier, bytes});
}
llvm::Value *mbarrier_try_wait_parity(llvm::IRBuilder<> &b, llvm::Value *barrier, llvm::Value *parity) {
  auto *type = llvm::FunctionType::get(b.getInt32Ty(), {barrier->getType(), b.getInt32Ty()}, false);
  llvm::Value *done = b.CreateCall(llvm::InlineAsm::get(type, kMbarrierTryWaitText, "=r,l,r,~{memory}", /*hasSideEffects=*/true), {barrier, parity});
  return b.CreateICmpNE(done, b.getInt32(0));
}
void mbarrier_inval(llvm::IRBuilder<> &b, llvm::Value *barrier) { effect_asm(b, kMbarrierInvalText, "l,~{memory}", {barrier}); }
void tma_load_2d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row, llvm::Value *barrier) {
  effect_asm(b, kTmaLoad2dText, "l,l,r,r,l,~{memory}", {shared, tensor_map, col, row, barrier});
}
void tma_store_2d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row) {
  effect_asm(b, kTmaStore2dText, "l,r,r,l,~{memory}", {tensor_map, col, row, shared});
}
void tma_load_3d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row, llvm::Value *plane,
                 llvm::Value *barrier) {
  effect_asm(b, kTmaLoad3dText, "l,l,r,r,r,l,~{memory}", {shared, tensor_map, col, row, plane, barrier});
}
void tma_store_3d(llvm::IRBuilder<> &b, llvm::Value *shared, llvm::Value *tensor_map, llvm::Value *col, llvm::Value *row, llvm::Value *plane) {
  effect_asm(b, kTmaStore3dText, "l,r,r,r,l,~{memory}", {tensor_map, col, row, plane, shared});
}
void bulk_commit_group(llvm::IRBuilder<> &b) { effect_asm(b, kBulkCommitGroupText, "~{memory}", {}); }
void bulk_wait_group_read(llvm::IRBuilder<> &b) { effect_asm(b, kBulkWaitGroupReadText, "~{memory}", {}); }

// Outputs $0 .. $(n/2 - 1) (tied to the accumulators), then the descriptors. scale-d is 1:
// d accumulates onto its input; 16-bit operands are not negated (1, 1) nor transposed (0, 0);
// tf32 (k8) and fp8 (e4m3, k32) take the negations only, the integer forms (k32, s32
// accumulators) neither.
std::string wgmma_text(int n, const char *type, bool b_mn_major) {
  const std::string d = wgmma_accumulators(n);
  bool integer = type[1] == '8';  // s8, u8
  if (integer) return fmt::format("wgmma.mma_async.sync.aligned.m64n{}k32.s32.{}.{} {{{}}}, ${}, ${}, 1;", n, type, type, d, n / 2, n / 2 + 1);
  if (std::string_view(type) == "tf32")  // K-major only: no transpose immediates
    return fmt::format("wgmma.mma_async.sync.aligned.m64n{}k8.f32.tf32.tf32 {{{}}}, ${}, ${}, 1, 1, 1;", n, d, n / 2, n / 2 + 1);
  if (std::string_view(type) == "e4m3")  // K-major only, as tf32
    return fmt::format("wgmma.mma_async.sync.aligned.m64n{}k32.f32.e4m3.e4m3 {{{}}}, ${}, ${}, 1, 1, 1;", n, d, n / 2, n / 2 + 1);
  return fmt::format("wgmma.mma_async.sync.aligned.m64n{}k16.f32.{}.{} {{{}}}, ${}, ${}, 1, 1, 1, 0, {};", n, type, type, d, n / 2, n / 2 + 1, int(b_mn_major));
}

const char *wgmma_type(const MatrixInstruction &instruction) {
  switch (instruction.a) {
    case DType::BF16: return "bf16";
    case DType::I8: return "s8";
    case DType::U8: return "u8";
    case DType::F32: return "tf32";
    case DType::F8E4M3: return "e4m3";
    default: return "f16";
  }
}

std::vector<llvm::Value *> wgmma_mma_async(llvm::IRBuilder<> &b, const MatrixInstruction &instruction, int n, llvm::Value *desc_a, llvm::Value *desc_b,
                                           const std::vector<llvm::Value *> &acc, bool b_mn_major) {
  if (int(acc.size()) != n / 2) internal_error(fmt::format("nvptx: wgmma m64n{} takes {} accumulators a thread, not {}", n, n / 2, acc.size()));
  return through_asm(b, wgmma_text(n, wgmma_type(instruction), b_mn_major), acc, {desc_a, desc_b}, "l,l,");
}

// A from registers: no imm-trans-a, which only a shared-memory A has.
std::string wgmma_text_register_a(int n, const char *type, bool b_mn_major) {
  const std::string d = wgmma_accumulators(n);
  int a = n / 2;
  return fmt::format("wgmma.mma_async.sync.aligned.m64n{}k16.f32.{}.{} {{{}}}, {{${}, ${}, ${}, ${}}}, ${}, 1, 1, 1, {};", n, type, type, d, a, a + 1, a + 2,
                     a + 3, a + 4, int(b_mn_major));
}

std::vector<llvm::Value *> wgmma_mma_async_register_a(llvm::IRBuilder<> &b, const MatrixInstruction &instruction, int n, const std::vector<llvm::Value *> &a,
                                                      llvm::Value *desc_b, const std::vector<llvm::Value *> &acc, bool b_mn_major) {
  if (int(acc.size()) != n / 2 || a.size() != 4)
    internal_error(fmt::format("nvptx: wgmma m64n{} takes 4 A registers and {} accumulators a thread, not {} and {}", n, n / 2, a.size(), acc.size()));
  const char *type = wgmma_type(instruction);
  std::vector<llvm::Value *> leading = a;
  leading.push_back(desc_b);
  return through_asm(b, wgmma_text_register_a(n, type, b_mn_major), acc, leading, "r,r,r,r,l,");
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
  // Parameters passed by value (TMA tensor maps) are grid constants: the kernel takes their
  // address in the parameter space (cvta.param) rather than copying them to local memory.
  std::vector<llvm::Metadata *> grid_constants;
  for (llvm::Argument &a : f->args())
    if (a.hasByValAttr()) grid_constants.push_back(llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(i32, a.getArgNo() + 1)));
  if (!grid_constants.empty()) {
    llvm::Metadata *fields[] = {llvm::ValueAsMetadata::get(f), llvm::MDString::get(ctx, "grid_constant"), llvm::MDNode::get(ctx, grid_constants)};
    annotations->addOperand(llvm::MDNode::get(ctx, fields));
  }
}

}  // namespace kdsl::codegen::nvptx
