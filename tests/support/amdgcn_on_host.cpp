// amdgcn_on_host.cpp - the AMDGPU hooks' instructions for the host: workitem/workgroup ids, the dispatch packet, s_barrier, ds_bpermute, v_dot4, ocml as libm
#include <llvm/IR/IntrinsicsAMDGPU.h>

#include "tests/support/host_calls.h"
#include "tests/support/simt_machine.h"

namespace kdsl::simt {
namespace {

// ocml's __ocml_<f>_f32 as libm's <f>f (rsqrt, which libm lacks, from the emulator).
llvm::Value *ocml_call(llvm::IRBuilder<> &b, llvm::CallInst *c) {
  llvm::Function *f = c->getCalledFunction();
  std::vector<llvm::Value *> args(c->arg_begin(), c->arg_end());
  llvm::StringRef base = f->getName().drop_front(7).drop_back(4);  // __ocml_erf_f32 -> erf
  if (base == "rsqrt") return call_host(b, reinterpret_cast<const void *>(&rsqrtf), b.getFloatTy(), args);
  llvm::FunctionCallee libm = f->getParent()->getOrInsertFunction((base + "f").str(), f->getFunctionType());
  return b.CreateCall(libm, args);
}

}  // namespace

// The fences around s_barrier stay: on the host they order nothing the emulator's barrier
// does not already order.
std::optional<llvm::Value *> amdgcn_on_host(llvm::IRBuilder<> &b, llvm::CallInst *c) {
  auto host = [&](auto *fn, llvm::Type *ret, std::vector<llvm::Value *> args) { return call_host(b, reinterpret_cast<const void *>(fn), ret, args); };
  llvm::Type *i32 = b.getInt32Ty();
  llvm::Function *f = c->getCalledFunction();
  if (!f) return std::nullopt;  // inline assembly: the AMDGPU hooks emit none
  auto dot4 = [&](llvm::Value *a, llvm::Value *bw, llvm::Value *acc, llvm::Value *a_signed, llvm::Value *b_signed) {
    return host(&dot4_instruction, i32, {a, bw, acc, b.CreateZExt(a_signed, i32), b.CreateZExt(b_signed, i32)});
  };
  switch (f->getIntrinsicID()) {
    // v_dot4_i32_i8, v_dot4_u32_u8 (a, b, c, clamp) and gfx11's v_dot4_i32_iu8 (a signed?,
    // a, b signed?, b, c, clamp); the hooks never clamp.
    case llvm::Intrinsic::amdgcn_sdot4: return dot4(c->getArgOperand(0), c->getArgOperand(1), c->getArgOperand(2), b.getTrue(), b.getTrue());
    case llvm::Intrinsic::amdgcn_udot4: return dot4(c->getArgOperand(0), c->getArgOperand(1), c->getArgOperand(2), b.getFalse(), b.getFalse());
    case llvm::Intrinsic::amdgcn_sudot4:
      return dot4(c->getArgOperand(1), c->getArgOperand(3), c->getArgOperand(4), c->getArgOperand(0), c->getArgOperand(2));
    case llvm::Intrinsic::amdgcn_workitem_id_x: return host(&thread_id, i32, {});
    case llvm::Intrinsic::amdgcn_workgroup_id_x: return host(&block_id, i32, {b.getInt32(0)});
    case llvm::Intrinsic::amdgcn_workgroup_id_y: return host(&block_id, i32, {b.getInt32(1)});
    case llvm::Intrinsic::amdgcn_workgroup_id_z: return host(&block_id, i32, {b.getInt32(2)});
    // The packet emulate_launch fills in, so the hooks' arithmetic on it (work-items over
    // the workgroup size) is what gives num_programs.
    case llvm::Intrinsic::amdgcn_dispatch_ptr:
      return llvm::ConstantExpr::getIntToPtr(b.getInt64(reinterpret_cast<uint64_t>(machine.dispatch_packet)), c->getType());
    case llvm::Intrinsic::amdgcn_s_barrier: return host(&barrier, b.getVoidTy(), {});
    case llvm::Intrinsic::amdgcn_ds_bpermute: return host(&ds_bpermute, i32, {c->getArgOperand(0), c->getArgOperand(1)});
    default:
      if (f->getName().starts_with("__ocml_") && f->getName().ends_with("_f32")) return ocml_call(b, c);
      return std::nullopt;
  }
}

}  // namespace kdsl::simt
