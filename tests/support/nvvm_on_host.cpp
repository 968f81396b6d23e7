// nvvm_on_host.cpp - the NVPTX hooks' instructions for the host: special registers, bar.sync, shfl.sync, ldmatrix, mma.sync, cp.async, wgmma, mbarrier, TMA, dp4a, libdevice as libm
#include <fmt/format.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <kdsl/error.h>

#include "codegen/codegen.h"
#include "codegen/nvptx/nvptx_intrinsics.h"
#include "tests/support/host_calls.h"
#include "tests/support/simt_machine.h"

namespace kdsl::simt {
namespace {

using llvm::Intrinsic::ID;

// The operand type of an mma.sync intrinsic.
DType mma_operand_type(ID id) {
  return id == llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32 ? DType::F16
         : id == llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16  ? DType::BF16
         : id == llvm::Intrinsic::nvvm_mma_m16n8k8_row_col_tf32   ? DType::F32
                                                                  : DType::I8;
}

// The index in kMmaTableTarget's list of the mma.sync of operand type `a`.
int mma_instruction_index(DType a) {
  const auto &list = codegen::target_info(kMmaTableTarget).matrix_instructions;
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].a == a) return int(i);
  internal_error("emulator: no mma.sync instruction for an mma intrinsic");
}

llvm::Value *ldmatrix_call(llvm::IRBuilder<> &b, llvm::CallInst *c, ID id) {
  int count = id == llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_b16 || id == llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16 ? 2 : 4;
  bool trans = id == llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16 || id == llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16;
  llvm::Value *out = stack_words(c, 4);
  call_host(b, reinterpret_cast<const void *>(&ldmatrix), b.getVoidTy(),
            {b.CreatePtrToInt(c->getArgOperand(0), b.getInt64Ty()), b.getInt32(uint32_t(count)), b.getInt32(trans), out});
  llvm::Value *r = llvm::PoisonValue::get(c->getType());
  for (int i = 0; i < count; ++i) r = b.CreateInsertValue(r, b.CreateLoad(b.getInt32Ty(), b.CreateConstInBoundsGEP1_32(b.getInt32Ty(), out, unsigned(i))), unsigned(i));
  return r;
}

// mma.sync, the intrinsic's or the inline PTX's (fp8: kMmaE4m3Text), whose operands are the same:
// A's 4 words, B's 2, C's 4.
llvm::Value *mma_call(llvm::IRBuilder<> &b, llvm::CallInst *c, int index) {
  llvm::Type *i32 = b.getInt32Ty();
  llvm::Value *in = stack_words(c, 10), *out = stack_words(c, 4);
  for (unsigned i = 0; i < 10; ++i) b.CreateStore(b.CreateBitCast(c->getArgOperand(i), i32), b.CreateConstInBoundsGEP1_32(i32, in, i));
  call_host(b, reinterpret_cast<const void *>(&mma_sync), b.getVoidTy(), {b.getInt32(uint32_t(index)), in, out});
  llvm::Value *r = llvm::PoisonValue::get(c->getType());
  for (unsigned i = 0; i < 4; ++i) {
    llvm::Type *elem = llvm::cast<llvm::StructType>(c->getType())->getElementType(i);
    r = b.CreateInsertValue(r, b.CreateBitCast(b.CreateLoad(i32, b.CreateConstInBoundsGEP1_32(i32, out, i)), elem), i);
  }
  return r;
}

// libdevice's __nv_<f> as libm's <f> (rsqrtf, which libm lacks, from the emulator).
llvm::Value *libdevice_call(llvm::IRBuilder<> &b, llvm::CallInst *c) {
  llvm::Function *f = c->getCalledFunction();
  std::vector<llvm::Value *> args(c->arg_begin(), c->arg_end());
  if (f->getName() == "__nv_rsqrtf") return call_host(b, reinterpret_cast<const void *>(&rsqrtf), b.getFloatTy(), args);
  llvm::FunctionCallee libm = f->getParent()->getOrInsertFunction(f->getName().substr(5), f->getFunctionType());
  return b.CreateCall(libm, args);
}

// The call's arguments from `first` on as its result (one value, or a struct of them).
llvm::Value *pass_through(llvm::IRBuilder<> &b, llvm::CallInst *c, unsigned first) {
  if (!c->getType()->isStructTy()) return c->getArgOperand(first);
  llvm::Value *r = llvm::PoisonValue::get(c->getType());
  for (unsigned i = first; i < c->arg_size(); ++i) r = b.CreateInsertValue(r, c->getArgOperand(i), i - first);
  return r;
}

// wgmma.mma_async (nvptx::wgmma_text, wgmma_text_register_a): A's descriptor or its 4 words,
// B's descriptor, then the n / 2 accumulators (f32 or i32), through the emulator's words.
llvm::Value *wgmma_call(llvm::IRBuilder<> &b, llvm::CallInst *c, int n, WgmmaType type, bool register_a, bool b_mn_major) {
  llvm::Type *i32 = b.getInt32Ty();
  unsigned count = unsigned(n / 2), first = register_a ? 5 : 2;
  llvm::Value *acc = stack_words(c, count);
  for (unsigned i = 0; i < count; ++i) b.CreateStore(b.CreateBitCast(c->getArgOperand(first + i), i32), b.CreateConstInBoundsGEP1_32(i32, acc, i));
  if (register_a) {
    llvm::Value *a = stack_words(c, 4);
    for (unsigned i = 0; i < 4; ++i) b.CreateStore(c->getArgOperand(i), b.CreateConstInBoundsGEP1_32(i32, a, i));
    call_host(b, reinterpret_cast<const void *>(&wgmma_register_a), b.getVoidTy(),
              {a, c->getArgOperand(4), b.getInt32(uint32_t(n)), b.getInt32(type), b.getInt32(b_mn_major), acc});
  } else {
    call_host(b, reinterpret_cast<const void *>(&wgmma), b.getVoidTy(),
              {c->getArgOperand(0), c->getArgOperand(1), b.getInt32(uint32_t(n)), b.getInt32(type), b.getInt32(b_mn_major), acc});
  }
  auto word = [&](unsigned i, llvm::Type *as) { return b.CreateBitCast(b.CreateLoad(i32, b.CreateConstInBoundsGEP1_32(i32, acc, i)), as); };
  if (count == 1) return word(0, c->getType());
  llvm::Value *r = llvm::PoisonValue::get(c->getType());
  for (unsigned i = 0; i < count; ++i) r = b.CreateInsertValue(r, word(i, llvm::cast<llvm::StructType>(c->getType())->getElementType(i)), i);
  return r;
}

// A 64-bit address operand ("l": shared memory, a tensor map) as an i64, whatever its IR type.
llvm::Value *address_operand(llvm::IRBuilder<> &b, llvm::Value *v) {
  return v->getType()->isPointerTy() ? b.CreatePtrToInt(v, b.getInt64Ty()) : b.CreateZExtOrTrunc(v, b.getInt64Ty());
}

// Hopper's transaction barriers and TMA tile copy (nvptx_intrinsics.h's constant texts), as the
// emulator's (simt_tma.cpp); nullopt for any other text. The init fence only orders the inits
// before the copy engine's use, and the emulator's barriers are visible to every thread at once.
std::optional<llvm::Value *> tma_ptx(llvm::IRBuilder<> &b, llvm::CallInst *c, const std::string &text) {
  using namespace codegen::nvptx;  // the texts; the host functions are simt:: (nvptx has emitters of the same names)
  auto operand = [&](unsigned i) { return c->getArgOperand(i); };
  auto address = [&](unsigned i) { return address_operand(b, operand(i)); };
  // The calls without a result: the asm call is removed (a null replacement).
  auto effect = [&](auto *fn, std::vector<llvm::Value *> args) -> std::optional<llvm::Value *> {
    call_host(b, reinterpret_cast<const void *>(fn), b.getVoidTy(), args);
    return nullptr;
  };
  if (text == kMbarrierInitFenceText) return nullptr;
  if (text == kMbarrierInitText) return effect(&simt::mbarrier_init, {address(0), operand(1)});
  if (text == kMbarrierExpectTxText) return effect(&simt::mbarrier_arrive_expect_tx, {address(0), operand(1)});
  if (text == kMbarrierInvalText) return effect(&simt::mbarrier_inval, {address(0)});
  if (text == kTmaLoad2dText) return effect(&simt::tma_load_2d, {address(0), address(1), operand(2), operand(3), address(4)});
  if (text == kTmaStore2dText) return effect(&simt::tma_store_2d, {address(0), operand(1), operand(2), address(3)});
  if (text == kTmaLoad3dText) return effect(&simt::tma_load_3d, {address(0), address(1), operand(2), operand(3), operand(4), address(5)});
  if (text == kTmaStore3dText) return effect(&simt::tma_store_3d, {address(0), operand(1), operand(2), operand(3), address(4)});
  if (text == kBulkCommitGroupText) return effect(&simt::tma_store_commit, {});
  if (text == kBulkWaitGroupReadText) return effect(&simt::tma_store_wait_read, {});
  if (text == kMbarrierTryWaitText) return call_host(b, reinterpret_cast<const void *>(&simt::mbarrier_try_wait_parity), b.getInt32Ty(), {address(0), operand(1)});
  return std::nullopt;
}

// Inline PTX the NVPTX hooks emit: dp4a.{s32|u32}.{s32|u32} $0, $1, $2, $3 (d = a . b + c),
// div.full.f32 (an IEEE division here: within its 2 ulp), the fp8 cvts (host_calls.h),
// Hopper's wgmma family (nvptx_intrinsics.h), whose fences and waits only order: their
// outputs are their inputs, and wgmma completes at once here; and its mbarriers and TMA.
std::optional<llvm::Value *> inline_ptx(llvm::IRBuilder<> &b, llvm::CallInst *c) {
  std::string text = llvm::cast<llvm::InlineAsm>(c->getCalledOperand())->getAsmString();
  if (text == "div.full.f32 $0, $1, $2;") return b.CreateFDiv(c->getArgOperand(0), c->getArgOperand(1));
  if (text == "fence.proxy.async.shared::cta;") return nullptr;
  if (text == codegen::nvptx::kMmaE4m3Text) return mma_call(b, c, mma_instruction_index(DType::F8E4M3));
  if (text == codegen::nvptx::kE4m3x2ToF16x2Text)
    return call_host(b, reinterpret_cast<const void *>(&cvt_f16x2_e4m3x2), b.getInt32Ty(), {b.CreateZExt(c->getArgOperand(0), b.getInt32Ty())});
  if (text == codegen::nvptx::kF32x2ToE4m3x2Text)
    return b.CreateTrunc(call_host(b, reinterpret_cast<const void *>(&cvt_e4m3x2_f32), b.getInt32Ty(), {c->getArgOperand(0), c->getArgOperand(1)}), b.getInt16Ty());
  if (text == "wgmma.commit_group.sync.aligned;") {
    call_host(b, reinterpret_cast<const void *>(&wgmma_commit), b.getVoidTy(), {});
    return nullptr;
  }
  if (text == "wgmma.fence.sync.aligned;") return pass_through(b, c, 0);
  if (constexpr std::string_view wait = "wgmma.wait_group.sync.aligned "; text.starts_with(wait)) {
    call_host(b, reinterpret_cast<const void *>(&wgmma_wait), b.getVoidTy(), {b.getInt32(uint32_t(std::stoi(text.substr(wait.size()))))});
    return pass_through(b, c, 0);
  }
  constexpr std::pair<const char *, WgmmaType> kTypes[] = {{"f16", kWgmmaF16}, {"bf16", kWgmmaBF16}, {"s8", kWgmmaS8}, {"u8", kWgmmaU8}, {"tf32", kWgmmaTF32}, {"e4m3", kWgmmaE4M3}};
  if (text.starts_with("wgmma.mma_async")) {
    for (auto [name, type] : kTypes)
      for (int n = 8; n <= 256; n += 8)
        for (bool mn : {false, true}) {
          if (text == codegen::nvptx::wgmma_text(n, name, mn)) return wgmma_call(b, c, n, type, false, mn);
          if (text == codegen::nvptx::wgmma_text_register_a(n, name, mn)) return wgmma_call(b, c, n, type, true, mn);
        }
  }
  if (std::optional<llvm::Value *> r = tma_ptx(b, c, text)) return r;
  for (const char *as : {"s32", "u32"})
    for (const char *bs : {"s32", "u32"})
      if (text == fmt::format("dp4a.{}.{} $0, $1, $2, $3;", as, bs))
        return call_host(b, reinterpret_cast<const void *>(&dot4_instruction), b.getInt32Ty(),
                         {c->getArgOperand(0), c->getArgOperand(1), c->getArgOperand(2), b.getInt32(as[0] == 's'), b.getInt32(bs[0] == 's')});
  throw Error("SIMT emulator: no host form for the inline PTX '" + text + "'");
}

}  // namespace

std::optional<llvm::Value *> nvvm_on_host(llvm::IRBuilder<> &b, llvm::CallInst *c) {
  auto host = [&](auto *fn, llvm::Type *ret, std::vector<llvm::Value *> args) { return call_host(b, reinterpret_cast<const void *>(fn), ret, args); };
  llvm::Type *i32 = b.getInt32Ty(), *f32 = b.getFloatTy(), *none = b.getVoidTy();
  if (c->isInlineAsm()) return inline_ptx(b, c);
  ID id = c->getCalledFunction()->getIntrinsicID();
  switch (id) {
    case llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x: return host(&thread_id, i32, {});
    case llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x: return host(&block_id, i32, {b.getInt32(0)});
    case llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y: return host(&block_id, i32, {b.getInt32(1)});
    case llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z: return host(&block_id, i32, {b.getInt32(2)});
    case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x: return host(&grid_size, i32, {b.getInt32(0)});
    case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y: return host(&grid_size, i32, {b.getInt32(1)});
    case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z: return host(&grid_size, i32, {b.getInt32(2)});
    case llvm::Intrinsic::nvvm_barrier0: return host(&barrier, none, {});
    case llvm::Intrinsic::nvvm_shfl_sync_bfly_f32: return host(&shfl_bfly_f32, f32, {c->getArgOperand(1), c->getArgOperand(2)});
    case llvm::Intrinsic::nvvm_shfl_sync_bfly_i32: return host(&shfl_bfly_i32, i32, {c->getArgOperand(1), c->getArgOperand(2)});
    case llvm::Intrinsic::nvvm_ex2_approx_ftz_f: return b.CreateIntrinsic(llvm::Intrinsic::exp2, {f32}, {c->getArgOperand(0)});
    case llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_b16:
    case llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16:
    case llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16:
    case llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16: return ldmatrix_call(b, c, id);
    case llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32:
    case llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16:
    case llvm::Intrinsic::nvvm_mma_m16n8k32_row_col_s8:
    case llvm::Intrinsic::nvvm_mma_m16n8k8_row_col_tf32: return mma_call(b, c, mma_instruction_index(mma_operand_type(id)));
    case llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16_s:
      return host(&cp_async_16, none,
                  {b.CreatePtrToInt(c->getArgOperand(0), b.getInt64Ty()), b.CreatePtrToInt(c->getArgOperand(1), b.getInt64Ty()), c->getArgOperand(2)});
    // cp.async completes at once here, so a missing wait_group goes unnoticed.
    case llvm::Intrinsic::nvvm_cp_async_commit_group:
    case llvm::Intrinsic::nvvm_cp_async_wait_group: return nullptr;
    default:
      if (c->getCalledFunction()->getName().starts_with("__nv_")) return libdevice_call(b, c);
      return std::nullopt;
  }
}

}  // namespace kdsl::simt
