// amdgpu_target.cpp - AMD's hooks for the GPU lowering: amdgcn intrinsics, the dispatch packet, ocml calls, kernel marking
#include "codegen/amdgpu/amdgpu_target.h"

#include <fmt/format.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>

#include <kdsl/error.h>

namespace kdsl::codegen::amdgpu {
namespace {

llvm::Value *ocml(llvm::IRBuilder<> &b, llvm::Module &m, const char *name, std::vector<llvm::Value *> args) {
  std::vector<llvm::Type *> types(args.size(), b.getFloatTy());
  llvm::FunctionCallee f = m.getOrInsertFunction(name, llvm::FunctionType::get(b.getFloatTy(), types, false));
  return b.CreateCall(f, args);
}

llvm::Value *unary(llvm::IRBuilder<> &b, llvm::Intrinsic::ID id, llvm::Value *x) { return b.CreateIntrinsic(id, {b.getFloatTy()}, {x}); }

// Byte offsets in the HSA kernel dispatch packet (hsa_kernel_dispatch_packet_t).
constexpr int kWorkgroupSizeOffset = 4;  // u16 x, y, z
constexpr int kGridSizeOffset = 12;      // u32 x, y, z: work-items, not workgroups

}  // namespace

llvm::Value *AmdgpuTarget::thread_id(llvm::IRBuilder<> &b) { return b.CreateIntrinsic(llvm::Intrinsic::amdgcn_workitem_id_x, {}, {}); }

llvm::Value *AmdgpuTarget::block_id(llvm::IRBuilder<> &b, int axis) {
  static const llvm::Intrinsic::ID ids[] = {llvm::Intrinsic::amdgcn_workgroup_id_x, llvm::Intrinsic::amdgcn_workgroup_id_y,
                                            llvm::Intrinsic::amdgcn_workgroup_id_z};
  return b.CreateIntrinsic(ids[axis], {}, {});
}

// HSA describes a launch in work-items; kdsl's grid counts workgroups (programs).
llvm::Value *AmdgpuTarget::grid_size(llvm::IRBuilder<> &b, int axis) {
  llvm::Value *packet = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_dispatch_ptr, {}, {});
  llvm::Value *items_at = b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), packet, uint64_t(kGridSizeOffset + 4 * axis));
  llvm::Value *size_at = b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), packet, uint64_t(kWorkgroupSizeOffset + 2 * axis));
  llvm::Value *items = b.CreateAlignedLoad(b.getInt32Ty(), items_at, llvm::Align(4));
  llvm::Value *size = b.CreateZExt(b.CreateAlignedLoad(b.getInt16Ty(), size_at, llvm::Align(2)), b.getInt32Ty());
  return b.CreateUDiv(items, size);
}

void AmdgpuTarget::barrier(llvm::IRBuilder<> &b) {
  llvm::SyncScope::ID workgroup = b.getContext().getOrInsertSyncScopeID("workgroup");
  b.CreateFence(llvm::AtomicOrdering::Release, workgroup);
  b.CreateIntrinsic(llvm::Intrinsic::amdgcn_s_barrier, {}, {});
  b.CreateFence(llvm::AtomicOrdering::Acquire, workgroup);
}

// Blocks are one-dimensional and waves are consecutive threads, so a thread's lane is its
// id modulo the wave size.
llvm::Value *AmdgpuTarget::lane_id(llvm::IRBuilder<> &b) { return b.CreateAnd(thread_id(b), uint64_t(info().warp_size - 1)); }

// ds_bpermute_b32 reads the value of the lane at byte address 4 * lane from every lane of
// the wave (all 64 on CDNA), so one instruction serves every xor mask; DPP would be
// cheaper for masks below 16 but covers only rows of 16 lanes.
llvm::Value *AmdgpuTarget::shuffle_xor(llvm::IRBuilder<> &b, llvm::Value *v, int lane_mask) {
  llvm::Value *address = b.CreateShl(b.CreateXor(lane_id(b), b.getInt32(uint32_t(lane_mask))), 2);
  bool fp = v->getType()->isFloatTy();
  llvm::Value *bits = fp ? b.CreateBitCast(v, b.getInt32Ty()) : v;
  llvm::Value *out = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_ds_bpermute, {}, {address, bits});
  return fp ? b.CreateBitCast(out, b.getFloatTy()) : out;
}

llvm::Value *AmdgpuTarget::math(llvm::IRBuilder<> &b, llvm::Module &m, OpKind kind, llvm::Value *x, llvm::Value *y) {
  auto f32 = [&](double v) { return llvm::ConstantFP::get(b.getFloatTy(), v); };
  switch (kind) {
    case OpKind::Exp: return unary(b, llvm::Intrinsic::exp, x);
    case OpKind::Exp2: return unary(b, llvm::Intrinsic::exp2, x);
    case OpKind::Log: return unary(b, llvm::Intrinsic::log, x);
    case OpKind::Log2: return unary(b, llvm::Intrinsic::log2, x);
    case OpKind::Sqrt: return unary(b, llvm::Intrinsic::sqrt, x);
    case OpKind::Sigmoid: return b.CreateFDiv(f32(1.0), b.CreateFAdd(f32(1.0), unary(b, llvm::Intrinsic::exp, b.CreateFNeg(x))));
    case OpKind::Rsqrt: return ocml(b, m, "__ocml_rsqrt_f32", {x});
    case OpKind::Sin: return ocml(b, m, "__ocml_sin_f32", {x});
    case OpKind::Cos: return ocml(b, m, "__ocml_cos_f32", {x});
    case OpKind::Tanh: return ocml(b, m, "__ocml_tanh_f32", {x});
    case OpKind::Erf: return ocml(b, m, "__ocml_erf_f32", {x});
    case OpKind::Pow: return ocml(b, m, "__ocml_pow_f32", {x, y});
    case OpKind::Rem: return ocml(b, m, "__ocml_fmod_f32", {x, y});
    default: internal_error(std::string("amdgpu: no math lowering for ") + ir::op_name(kind));
  }
}

void AmdgpuTarget::mark_kernel(llvm::Function *f, int threads) {
  f->setCallingConv(llvm::CallingConv::AMDGPU_KERNEL);
  f->addFnAttr("amdgpu-flat-work-group-size", fmt::format("1,{}", threads));
  f->addFnAttr("uniform-work-group-size", "true");  // every launch is whole workgroups
}

void AmdgpuTarget::print(llvm::IRBuilder<> &b, llvm::Module &, const std::string &, const std::vector<llvm::Value *> &) {
  throw Error(fmt::format("kernel '{}' calls device_print, which kdsl does not lower for AMD GPUs ({}): printf there needs the HIP runtime's "
                          "hostcall buffer; debug the kernel on the CPU device or a CUDA GPU",
                          b.GetInsertBlock()->getParent()->getName().str(), info().name));
}

// s_trap ends the wave; the HIP runtime reports the launch as failed. The message is not
// printed (see print).
void AmdgpuTarget::assert_fail(llvm::IRBuilder<> &b, llvm::Module &, const std::string &, const std::vector<llvm::Value *> &, const std::string &,
                               const std::string &) {
  b.CreateIntrinsic(llvm::Intrinsic::trap, {}, {});
}

void AmdgpuTarget::matrix_dot(gpu::GpuLowering &lowering, const ir::Op &op, const MatrixInstruction &instruction) {
  emit_mfma_dot(lowering, op, instruction);
}

// gfx9's dot4 instructions take both operands signed (sdot4) or both unsigned (udot4). A
// u8 x i8 product goes through the signed one with the u8 bytes offset by -128 (flipping
// each byte's top bit gives u - 128 as an i8), adding back 128 * the sum of the i8 bytes
// (one more sdot4 against ones): sum (u - 128) s + 128 sum s = sum u s, exactly, since
// every step wraps modulo 2^32 like the i32 adds it stands for.
llvm::Value *AmdgpuTarget::dot4(llvm::IRBuilder<> &b, llvm::Value *a, llvm::Value *bw, llvm::Value *acc, bool a_signed, bool b_signed) {
  llvm::Value *no_clamp = b.getFalse();
  if (info().isa_version >= 11000)
    return b.CreateIntrinsic(llvm::Intrinsic::amdgcn_sudot4, {}, {b.getInt1(a_signed), a, b.getInt1(b_signed), bw, acc, no_clamp});
  if (a_signed == b_signed)
    return b.CreateIntrinsic(a_signed ? llvm::Intrinsic::amdgcn_sdot4 : llvm::Intrinsic::amdgcn_udot4, {}, {a, bw, acc, no_clamp});
  llvm::Value *u = a_signed ? bw : a, *s = a_signed ? a : bw;
  llvm::Value *shifted = b.CreateXor(u, b.getInt32(0x80808080u));
  llvm::Value *sum_s = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_sdot4, {}, {s, b.getInt32(0x01010101u), b.getInt32(0), no_clamp});
  llvm::Value *partial = b.CreateIntrinsic(llvm::Intrinsic::amdgcn_sdot4, {}, {shifted, s, acc, no_clamp});
  return b.CreateAdd(partial, b.CreateShl(sum_s, 7));
}

}  // namespace kdsl::codegen::amdgpu
