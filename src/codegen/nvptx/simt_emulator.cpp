// simt_emulator.cpp - the NVPTX lowering retargeted to the host, with GPU threads as CPU threads
#include "codegen/nvptx/simt_emulator.h"

#include <fmt/format.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <barrier>
#include <cmath>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <kdsl/error.h>

#include "codegen/codegen.h"
#include "codegen/host/target_machine.h"
#include "codegen/nvptx/assign_layouts.h"
#include "codegen/nvptx/lower_nvptx.h"
#include "codegen/pipeline.h"

namespace kdsl::codegen::nvptx {
namespace {

// --- the emulated machine: one CTA at a time ------------------------------------------------
struct Machine {
  std::barrier<> *sync = nullptr;
  std::vector<uint32_t> exchange;
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

EmulatedKernel compile_for_emulation(const ir::Function &traced, const std::string &symbol, int num_warps) {
  const TargetInfo &target = target_info("sm_80");
  ir::Function fn = traced;
  run_pipeline(fn);
  LayoutPlan plan = assign_layouts(fn, target, num_warps);
  llvm::LLVMContext context;
  auto module = std::make_unique<llvm::Module>(symbol, context);
  std::unique_ptr<llvm::TargetMachine> tm = make_host_target_machine();
  module->setDataLayout(tm->createDataLayout());
  module->setTargetTriple(tm->getTargetTriple().str());
  LoweringResult lowered = lower_to_nvptx(fn, plan, target, *module, symbol + "_kernel");
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
