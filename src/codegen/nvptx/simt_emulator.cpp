// simt_emulator.cpp - the NVPTX lowering retargeted to the host, with GPU threads as CPU threads
#include "codegen/nvptx/simt_emulator.h"

#include <fmt/format.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <array>
#include <barrier>
#include <bit>
#include <cmath>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <kdsl/error.h>
#include <kdsl/half.h>

#include "codegen/codegen.h"
#include "codegen/host/target_machine.h"
#include "codegen/gpu/assign_layouts.h"
#include "codegen/gpu/lower_gpu.h"
#include "codegen/nvptx/mma_fragments.h"
#include "codegen/gpu/plan_pipelining.h"
#include "codegen/nvptx/nvptx_target.h"
#include "codegen/pipeline.h"

namespace kdsl::codegen::nvptx {
namespace {

// --- the emulated machine: one CTA at a time ------------------------------------------------
struct Machine {
  std::barrier<> *sync = nullptr;
  std::vector<uint32_t> exchange;
  std::vector<uint64_t> addresses;                // ldmatrix: each thread's row address
  std::vector<std::array<uint32_t, 10>> fragments;  // mma.sync: each thread's a, b, c registers
  int32_t ctaid[3] = {}, nctaid[3] = {};
  alignas(16) uint8_t shared[228 * 1024];
};
Machine machine;
thread_local int32_t this_tid = 0;

int32_t emu_tid() { return this_tid; }
int32_t emu_ctaid(int32_t axis) { return machine.ctaid[axis]; }
int32_t emu_nctaid(int32_t axis) { return machine.nctaid[axis]; }
void emu_barrier() { machine.sync->arrive_and_wait(); }
uint32_t emu_shuffle_bits(uint32_t v, int32_t mask) {
  machine.exchange[size_t(this_tid)] = v;
  machine.sync->arrive_and_wait();
  uint32_t r = machine.exchange[size_t(this_tid ^ mask)];
  machine.sync->arrive_and_wait();
  return r;
}
int32_t emu_shfl_i32(int32_t v, int32_t mask) { return int32_t(emu_shuffle_bits(uint32_t(v), mask)); }
float emu_shfl_f32(float v, int32_t mask) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  bits = emu_shuffle_bits(bits, mask);
  std::memcpy(&v, &bits, 4);
  return v;
}
float emu_rsqrtf(float x) { return 1.0f / std::sqrt(x); }

// ldmatrix.sync.aligned.m8n8.x{count}[.trans].shared.b16, from the PTX ISA's description:
// lanes 8j .. 8j + 7 give the row addresses of matrix j; lane l receives in register j the
// 16-bit pair at row l / 4, columns 2 (l % 4) + {0, 1} (with .trans: rows 2 (l % 4) + {0, 1},
// column l / 4).
void emu_ldmatrix(uint64_t address, int32_t count, int32_t trans, uint32_t *out) {
  machine.addresses[size_t(this_tid)] = address;
  machine.sync->arrive_and_wait();
  int lane = this_tid % 32, warp_base = this_tid - lane;
  for (int j = 0; j < count; ++j) {
    uint16_t pair[2];
    for (int h = 0; h < 2; ++h) {
      int row = trans ? 2 * (lane % 4) + h : lane / 4, col = trans ? lane / 4 : 2 * (lane % 4) + h;
      std::memcpy(&pair[h], reinterpret_cast<const uint8_t *>(machine.addresses[size_t(warp_base + 8 * j + row)]) + 2 * col, 2);
    }
    out[j] = uint32_t(pair[0]) | uint32_t(pair[1]) << 16;
  }
  machine.sync->arrive_and_wait();
}

double fragment_value(DType t, uint32_t reg, int i) {
  switch (t) {
    case DType::F16: return f16_bits_to_f32(uint16_t(reg >> (16 * i)));
    case DType::BF16: return bf16_bits_to_f32(uint16_t(reg >> (16 * i)));
    default: return int8_t(uint8_t(reg >> (8 * i)));
  }
}

// mma.sync for the sm_80 instruction `index`: every lane of the warp contributes its a, b
// and c registers; each lane computes its d elements from the ISA's fragment tables.
void emu_mma(int32_t index, const uint32_t *abc, uint32_t *d) {
  const MatrixInstruction &mi = target_info("sm_80").matrix_instructions[size_t(index)];
  std::memcpy(machine.fragments[size_t(this_tid)].data(), abc, 40);
  machine.sync->arrive_and_wait();
  int lane = this_tid % 32, warp_base = this_tid - lane;
  int per_reg = 4 / dtype_bytes(mi.a);
  std::vector<double> a(size_t(mi.m * mi.k)), b(size_t(mi.k * mi.n));
  for (int l = 0; l < 32; ++l) {
    const auto &f = machine.fragments[size_t(warp_base + l)];
    for (int i = 0; i < mma_a_elements(mi); ++i) {
      FragmentElement e = mma_a_element(mi, l, i);
      a[size_t(e.row * mi.k + e.col)] = fragment_value(mi.a, f[size_t(i / per_reg)], i % per_reg);
    }
    for (int i = 0; i < mma_b_elements(mi); ++i) {
      FragmentElement e = mma_b_element(mi, l, i);
      b[size_t(e.row * mi.n + e.col)] = fragment_value(mi.b, f[size_t(4 + i / per_reg)], i % per_reg);
    }
  }
  for (int i = 0; i < kMmaCElements; ++i) {
    FragmentElement e = mma_c_element(mi, lane, i);
    double sum = 0;
    for (int k = 0; k < mi.k; ++k) sum += a[size_t(e.row * mi.k + k)] * b[size_t(k * mi.n + e.col)];
    uint32_t c = abc[6 + i];
    if (mi.acc == DType::F32) d[i] = std::bit_cast<uint32_t>(float(double(std::bit_cast<float>(c)) + sum));
    else d[i] = c + uint32_t(int64_t(sum));  // s32 wraps, as the non-saturating instruction does
  }
  machine.sync->arrive_and_wait();
}

// cp.async.cg.shared.global 16 bytes, `src_bytes` of them read, the rest zero-filled; done
// at once, so commit_group and wait_group have nothing to do.
void emu_cp_async_16(uint64_t dst, uint64_t src, int32_t src_bytes) {
  std::memset(reinterpret_cast<void *>(dst), 0, 16);
  if (src_bytes > 0) std::memcpy(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), size_t(src_bytes));
}

int instruction_index(llvm::Intrinsic::ID id) {
  DType a = id == llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32 ? DType::F16 : id == llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16 ? DType::BF16 : DType::I8;
  const auto &list = target_info("sm_80").matrix_instructions;
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].a == a) return int(i);
  internal_error("emulator: no sm_80 instruction for an mma intrinsic");
}

llvm::Value *callee(llvm::IRBuilder<> &b, void *fn) { return b.CreateIntToPtr(b.getInt64(reinterpret_cast<uint64_t>(fn)), b.getPtrTy()); }

void rewrite_calls(llvm::Module &m) {
  std::vector<llvm::CallInst *> calls;
  for (llvm::Function &f : m)
    for (llvm::BasicBlock &bb : f)
      for (llvm::Instruction &i : bb)
        if (auto *c = llvm::dyn_cast<llvm::CallInst>(&i); c && c->getCalledFunction()) calls.push_back(c);
  llvm::LLVMContext &ctx = m.getContext();
  auto *i32 = llvm::Type::getInt32Ty(ctx);
  auto *f32 = llvm::Type::getFloatTy(ctx);
  for (llvm::CallInst *c : calls) {
    llvm::IRBuilder<> b(c);
    llvm::Function *target = c->getCalledFunction();
    auto call = [&](void *fn, llvm::Type *ret, std::vector<llvm::Value *> args) {
      std::vector<llvm::Type *> types;
      for (auto *a : args) types.push_back(a->getType());
      return b.CreateCall(llvm::FunctionType::get(ret, types, false), callee(b, fn), args);
    };
    // i32 words on the stack, allocated once in the entry block (calls sit in loops).
    auto words = [&](llvm::CallInst *at, unsigned n) -> llvm::Value * {
      llvm::BasicBlock &entry = at->getFunction()->getEntryBlock();
      llvm::IRBuilder<> eb(&entry, entry.getFirstInsertionPt());
      return eb.CreateAlloca(llvm::ArrayType::get(i32, n));
    };
    llvm::Value *r = nullptr;
    switch (target->getIntrinsicID()) {
      case llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x: r = call(reinterpret_cast<void *>(&emu_tid), i32, {}); break;
      case llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x: r = call(reinterpret_cast<void *>(&emu_ctaid), i32, {b.getInt32(0)}); break;
      case llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y: r = call(reinterpret_cast<void *>(&emu_ctaid), i32, {b.getInt32(1)}); break;
      case llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z: r = call(reinterpret_cast<void *>(&emu_ctaid), i32, {b.getInt32(2)}); break;
      case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x: r = call(reinterpret_cast<void *>(&emu_nctaid), i32, {b.getInt32(0)}); break;
      case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y: r = call(reinterpret_cast<void *>(&emu_nctaid), i32, {b.getInt32(1)}); break;
      case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z: r = call(reinterpret_cast<void *>(&emu_nctaid), i32, {b.getInt32(2)}); break;
      case llvm::Intrinsic::nvvm_barrier0: r = call(reinterpret_cast<void *>(&emu_barrier), b.getVoidTy(), {}); break;
      case llvm::Intrinsic::nvvm_shfl_sync_bfly_f32: r = call(reinterpret_cast<void *>(&emu_shfl_f32), f32, {c->getArgOperand(1), c->getArgOperand(2)}); break;
      case llvm::Intrinsic::nvvm_shfl_sync_bfly_i32: r = call(reinterpret_cast<void *>(&emu_shfl_i32), i32, {c->getArgOperand(1), c->getArgOperand(2)}); break;
      case llvm::Intrinsic::nvvm_ex2_approx_ftz_f: r = b.CreateIntrinsic(llvm::Intrinsic::exp2, {f32}, {c->getArgOperand(0)}); break;
      case llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_b16: case llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16:
      case llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16: case llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16: {
        auto id = target->getIntrinsicID();
        int count = id == llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_b16 || id == llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16 ? 2 : 4;
        bool trans = id == llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16 || id == llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16;
        llvm::Value *out = words(c, 4);
        call(reinterpret_cast<void *>(&emu_ldmatrix), b.getVoidTy(), {b.CreatePtrToInt(c->getArgOperand(0), b.getInt64Ty()), b.getInt32(uint32_t(count)), b.getInt32(trans), out});
        r = llvm::PoisonValue::get(c->getType());
        for (int i = 0; i < count; ++i) r = b.CreateInsertValue(r, b.CreateLoad(i32, b.CreateConstInBoundsGEP1_32(i32, out, unsigned(i))), unsigned(i));
        break;
      }
      case llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16_s:
        call(reinterpret_cast<void *>(&emu_cp_async_16), b.getVoidTy(),
             {b.CreatePtrToInt(c->getArgOperand(0), b.getInt64Ty()), b.CreatePtrToInt(c->getArgOperand(1), b.getInt64Ty()), c->getArgOperand(2)});
        break;
      case llvm::Intrinsic::nvvm_cp_async_commit_group: case llvm::Intrinsic::nvvm_cp_async_wait_group: break;
      case llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32: case llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_bf16:
      case llvm::Intrinsic::nvvm_mma_m16n8k32_row_col_s8: {
        llvm::Value *in = words(c, 10), *out = words(c, 4);
        for (unsigned i = 0; i < 10; ++i) b.CreateStore(b.CreateBitCast(c->getArgOperand(i), i32), b.CreateConstInBoundsGEP1_32(i32, in, i));
        call(reinterpret_cast<void *>(&emu_mma), b.getVoidTy(), {b.getInt32(uint32_t(instruction_index(target->getIntrinsicID()))), in, out});
        r = llvm::PoisonValue::get(c->getType());
        for (unsigned i = 0; i < 4; ++i) {
          llvm::Type *elem = llvm::cast<llvm::StructType>(c->getType())->getElementType(i);
          r = b.CreateInsertValue(r, b.CreateBitCast(b.CreateLoad(i32, b.CreateConstInBoundsGEP1_32(i32, out, i)), elem), i);
        }
        break;
      }
      default: {
        llvm::StringRef name = target->getName();
        if (!name.starts_with("__nv_")) continue;
        std::vector<llvm::Value *> args(c->arg_begin(), c->arg_end());
        if (name == "__nv_rsqrtf") {
          r = call(reinterpret_cast<void *>(&emu_rsqrtf), f32, args);
        } else {
          std::string libm = name.substr(5).str();  // __nv_logf -> logf
          llvm::FunctionCallee fn = m.getOrInsertFunction(libm, target->getFunctionType());
          r = b.CreateCall(fn, args);
        }
      }
    }
    if (!c->getType()->isVoidTy()) c->replaceAllUsesWith(r);
    c->eraseFromParent();
  }
}

// void symbol_entry(const u64 *slots): unpacks the slots into the kernel's parameters.
void add_entry(llvm::Module &m, llvm::Function *kernel, const std::string &name) {
  llvm::LLVMContext &ctx = m.getContext();
  llvm::IRBuilder<> b(ctx);
  auto *f = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy()}, false), llvm::Function::ExternalLinkage, name, m);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
  std::vector<llvm::Value *> args;
  for (llvm::Argument &p : kernel->args()) {
    llvm::Value *raw = b.CreateLoad(b.getInt64Ty(), b.CreateConstInBoundsGEP1_64(b.getInt64Ty(), f->getArg(0), p.getArgNo()));
    llvm::Type *t = p.getType();
    if (t->isPointerTy()) args.push_back(b.CreateIntToPtr(raw, t));
    else if (t->isIntegerTy()) args.push_back(b.CreateTrunc(raw, t));
    else args.push_back(b.CreateBitCast(b.CreateTrunc(raw, b.getIntNTy(t->getPrimitiveSizeInBits())), t));
  }
  b.CreateCall(kernel, args);
  b.CreateRetVoid();
}

}  // namespace

EmulatedKernel compile_for_emulation(const ir::Function &traced, const std::string &symbol, int num_warps, bool tensor_cores, int num_stages) {
  TargetInfo target = target_info("sm_80");
  if (!tensor_cores) target.matrix_instructions.clear();
  ir::Function fn = traced;
  run_pipeline(fn);
  gpu::LayoutPlan plan = gpu::assign_layouts(fn, target, num_warps);
  gpu::plan_pipelining(fn, target, num_stages, plan);
  llvm::LLVMContext context;
  auto module = std::make_unique<llvm::Module>(symbol, context);
  std::unique_ptr<llvm::TargetMachine> tm = make_host_target_machine();
  module->setDataLayout(tm->createDataLayout());
  module->setTargetTriple(tm->getTargetTriple().str());
  NvptxTarget hooks(target);
  gpu::LoweringResult lowered = gpu::lower_to_gpu(fn, plan, hooks, *module, symbol + "_kernel");
  if (lowered.shared_bytes > int(sizeof(machine.shared))) throw Error(fmt::format("emulator: {} needs {} bytes of shared memory", fn.name, lowered.shared_bytes));
  llvm::Function *kernel = module->getFunction(symbol + "_kernel");
  kernel->setCallingConv(llvm::CallingConv::C);
  if (llvm::NamedMDNode *md = module->getNamedMetadata("nvvm.annotations")) module->eraseNamedMetadata(md);
  llvm::GlobalVariable *shared = module->getGlobalVariable(symbol + "_kernel_shared");
  llvm::Constant *address = llvm::ConstantExpr::getIntToPtr(llvm::ConstantInt::get(llvm::Type::getInt64Ty(context), reinterpret_cast<uint64_t>(machine.shared)),
                                                            shared->getType());
  shared->replaceAllUsesWith(address);
  shared->eraseFromParent();
  rewrite_calls(*module);
  add_entry(*module, kernel, symbol);
  std::string problems;
  llvm::raw_string_ostream s(problems);
  if (llvm::verifyModule(*module, &s)) internal_error("emulator module is invalid: " + problems);
  std::vector<uint8_t> object = emit_machine_code(*module, *tm, llvm::CodeGenFileType::ObjectFile);
  EmulatedKernel k;
  k.entry = reinterpret_cast<void (*)(const uint64_t *)>(load_host_object(object, symbol));
  k.threads = lowered.threads;
  k.shared_bytes = lowered.shared_bytes;
  return k;
}

void emulate_launch(const EmulatedKernel &k, const int32_t grid[3], const uint64_t *slots) {
  static std::mutex one_launch_at_a_time;
  std::lock_guard lock(one_launch_at_a_time);
  std::barrier<> sync(k.threads);
  machine.sync = &sync;
  machine.exchange.assign(size_t(k.threads), 0);
  machine.addresses.assign(size_t(k.threads), 0);
  machine.fragments.assign(size_t(k.threads), {});
  for (int i = 0; i < 3; ++i) machine.nctaid[i] = grid[i];
  std::vector<std::thread> threads;
  for (int t = 0; t < k.threads; ++t)
    threads.emplace_back([&, t] {
      this_tid = t;
      for (int z = 0; z < grid[2]; ++z)
        for (int y = 0; y < grid[1]; ++y)
          for (int x = 0; x < grid[0]; ++x) {
            if (t == 0) {
              machine.ctaid[0] = x;
              machine.ctaid[1] = y;
              machine.ctaid[2] = z;
            }
            sync.arrive_and_wait();  // the program coordinates are set
            k.entry(slots);
            sync.arrive_and_wait();  // every thread is done before the next program reuses shared memory
          }
    });
  for (auto &t : threads) t.join();
}

}  // namespace kdsl::codegen::nvptx
