// simt_emulator.cpp - the generic GPU lowering with a vendor's hooks, retargeted to the host, with GPU threads as CPU threads
#include "tests/support/simt_emulator.h"

#include <fmt/format.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <kdsl/error.h>

#include "codegen/amdgpu/amdgpu_target.h"
#include "codegen/codegen.h"
#include "codegen/gpu/lower_gpu.h"
#include "codegen/gpu/plan_kernel.h"
#include "codegen/host/target_machine.h"
#include "codegen/nvptx/nvptx_target.h"
#include "codegen/pipeline.h"
#include "codegen/tensor_map_limits.h"
#include "tests/support/host_calls.h"
#include "tests/support/simt_machine.h"

namespace kdsl::simt {
namespace {

// void symbol(const u64 *slots): unpacks the slots into the kernel's parameters.
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

// Fills the HSA dispatch packet the AMD hooks read the grid from: workgroups of `threads`
// work-items along x, the grid in work-items.
void fill_dispatch_packet(int threads, const int32_t grid[3]) {
  uint16_t workgroup[3] = {uint16_t(threads), 1, 1};
  uint32_t items[3] = {uint32_t(grid[0]) * uint32_t(threads), uint32_t(grid[1]), uint32_t(grid[2])};
  std::memcpy(machine.dispatch_packet + 4, workgroup, sizeof(workgroup));
  std::memcpy(machine.dispatch_packet + 12, items, sizeof(items));
}

}  // namespace

EmulatedKernel compile_for_emulation(const ir::Function &traced, const std::string &symbol, const Emulation &emulation) {
  codegen::TargetInfo target = codegen::target_info(emulation.arch);
  const bool amd = target.backend == "hip";
  if (emulation.matrix_instructions && amd) internal_error("emulator: matrix instructions are emulated on NVIDIA targets only, not " + target.name);
  if (!emulation.matrix_instructions) target.matrix_instructions.clear();
  ir::Function fn = traced;
  codegen::run_pipeline(fn);
  codegen::gpu::LayoutPlan plan = codegen::gpu::plan_gpu_kernel(fn, target, emulation.num_warps, emulation.num_stages);

  llvm::LLVMContext context;
  auto module = std::make_unique<llvm::Module>(symbol, context);
  std::unique_ptr<llvm::TargetMachine> tm = codegen::make_host_target_machine();
  module->setDataLayout(tm->createDataLayout());
  module->setTargetTriple(tm->getTargetTriple().str());
  std::unique_ptr<codegen::gpu::GpuTarget> hooks;
  if (amd) hooks = std::make_unique<codegen::amdgpu::AmdgpuTarget>(target);
  else hooks = std::make_unique<codegen::nvptx::NvptxTarget>(target);
  const std::string kernel_name = symbol + "_kernel";
  codegen::gpu::LoweringResult lowered = codegen::gpu::lower_to_gpu(fn, plan, *hooks, *module, kernel_name);
  if (lowered.shared_bytes > target.shared_bytes_optin)
    throw Error(fmt::format("emulator: {} needs {} bytes of shared memory; {} has {}", fn.name, lowered.shared_bytes, target.name, target.shared_bytes_optin));

  llvm::Function *kernel = module->getFunction(kernel_name);
  kernel->setCallingConv(llvm::CallingConv::C);  // from ptx_kernel / amdgpu_kernel
  // Tensor maps are grid constants passed by value; here the entry passes each one's address
  // (emulate_launch's EmulatedTensorMap), which the kernel reads in place as the GPU does.
  for (llvm::Argument &p : kernel->args()) p.removeAttr(llvm::Attribute::ByVal);
  if (llvm::NamedMDNode *md = module->getNamedMetadata("nvvm.annotations")) module->eraseNamedMetadata(md);
  llvm::GlobalVariable *shared = module->getGlobalVariable(kernel_name + "_shared");
  shared->replaceAllUsesWith(llvm::ConstantExpr::getIntToPtr(llvm::ConstantInt::get(llvm::Type::getInt64Ty(context), reinterpret_cast<uint64_t>(machine.shared)),
                                                             shared->getType()));
  shared->eraseFromParent();
  rewrite_calls(*module, amd ? &amdgcn_on_host : &nvvm_on_host);
  add_entry(*module, kernel, symbol);
  std::string problems;
  llvm::raw_string_ostream s(problems);
  if (llvm::verifyModule(*module, &s)) internal_error("emulator module is invalid: " + problems);

  std::vector<uint8_t> object = codegen::emit_machine_code(*module, *tm, llvm::CodeGenFileType::ObjectFile);
  EmulatedKernel k;
  // load_host_object returns the symbol's address typed as a host kernel's; ours takes slots only.
  k.entry = reinterpret_cast<void (*)(const uint64_t *)>(reinterpret_cast<void *>(codegen::load_host_object(object, symbol)));
  k.threads = lowered.threads;
  k.warp_size = target.warp_size;
  k.shared_bytes = lowered.shared_bytes;
  k.tensor_maps = lowered.tensor_maps;
  k.arguments = int(kernel->arg_size() - lowered.tensor_maps.size());
  return k;
}

EmulatedTensorMap encode_tensor_map(const codegen::TensorMapSpec &spec, const uint64_t *slots) {
  auto field = [&](const codegen::TensorMapField &f) { return f.param >= 0 ? int64_t(int32_t(uint32_t(slots[f.param]))) : f.value; };
  EmulatedTensorMap m;
  m.base = slots[spec.base];
  m.rows = field(spec.rows);
  m.cols = field(spec.cols);
  m.row_stride = field(spec.row_stride);
  m.rank = spec.rank;
  if (spec.rank == 3) m.planes = field(spec.planes), m.plane_stride = field(spec.plane_stride);
  m.elem_bytes = dtype_bytes(spec.elem);
  m.box_rows = spec.box_rows;
  m.box_cols = spec.box_cols;
  m.swizzle_bytes = spec.swizzle_bytes;
  const std::string what = fmt::format("emulator: the tensor map of argument {}", spec.base);
  // The launcher's rules (codegen/tensor_map_limits.h), so that an emulated launch refuses what a GPU's would.
  if (!codegen::tensor_map_extent_ok(m.rows) || !codegen::tensor_map_extent_ok(m.cols) || !codegen::tensor_map_extent_ok(m.planes))
    throw Error(fmt::format("{}: {} x {} x {} elements; TMA takes extents in [0, 2^32]", what, m.planes, m.rows, m.cols));
  if (codegen::tensor_map_empty(m.rows, m.cols) || m.planes == 0) {  // a 1 x 1 stand-in, as the CUDA launcher's; the tensor's address and strides go unread
    alignas(16) static uint8_t read_stand_in[codegen::kTensorMapStandInBytes] = {}, written_stand_in[codegen::kTensorMapStandInBytes] = {};
    m.base = reinterpret_cast<uint64_t>(spec.written ? written_stand_in : read_stand_in);
    m.rows = m.cols = m.planes = 1;
    m.row_stride = m.plane_stride = codegen::kTensorMapStandInBytes / m.elem_bytes;
    return m;
  }
  if (!codegen::tensor_map_address_ok(m.base)) throw Error(fmt::format("{}: its address {:#x} is not 16-byte aligned, as TMA needs", what, m.base));
  if (!codegen::tensor_map_stride_ok(m.row_stride, m.elem_bytes))
    throw Error(fmt::format("{}: a row stride of {} elements of {} bytes; TMA needs a positive multiple of 16 bytes", what, m.row_stride, m.elem_bytes));
  if (m.rank == 3 && !codegen::tensor_map_stride_ok(m.plane_stride, m.elem_bytes))
    throw Error(fmt::format("{}: a plane stride of {} elements of {} bytes; TMA needs a positive multiple of 16 bytes", what, m.plane_stride, m.elem_bytes));
  return m;
}

void emulate_launch(const EmulatedKernel &k, const int32_t grid[3], const uint64_t *slots) {
  static std::mutex one_launch_at_a_time;
  std::lock_guard lock(one_launch_at_a_time);
  std::vector<EmulatedTensorMap> maps;  // alignas(64): each one aligned as the parameter is
  for (const codegen::TensorMapSpec &spec : k.tensor_maps) maps.push_back(encode_tensor_map(spec, slots));
  std::vector<uint64_t> with_maps(slots, slots + (maps.empty() ? 0 : k.arguments));
  for (const EmulatedTensorMap &m : maps) with_maps.push_back(reinterpret_cast<uint64_t>(&m));
  const uint64_t *parameters = maps.empty() ? slots : with_maps.data();
  mbarrier_reset();
  std::barrier<> sync(k.threads);
  machine.sync = &sync;
  machine.warp_size = k.warp_size;
  machine.exchange.assign(size_t(k.threads), 0);
  machine.addresses.assign(size_t(k.threads), 0);
  machine.fragments.assign(size_t(k.threads), {});
  for (int i = 0; i < 3; ++i) machine.grid[i] = grid[i];
  fill_dispatch_packet(k.threads, grid);
  std::vector<std::thread> threads;
  for (int t = 0; t < k.threads; ++t)
    threads.emplace_back([&, t] {
      set_thread(t);
      for (int z = 0; z < grid[2]; ++z)
        for (int y = 0; y < grid[1]; ++y)
          for (int x = 0; x < grid[0]; ++x) {
            if (t == 0) {
              machine.block[0] = x;
              machine.block[1] = y;
              machine.block[2] = z;
            }
            sync.arrive_and_wait();  // the program coordinates are set
            k.entry(parameters);
            wgmma_program_end();
            tma_store_program_end();
            sync.arrive_and_wait();  // every thread is done before the next program reuses shared memory
            // Checked once every thread is done: a barrier may be invalidated by one thread after
            // the others have finished. The next program cannot start before thread 0 arrives.
            if (t == 0) mbarrier_program_end();
          }
    });
  for (auto &t : threads) t.join();
  if (!machine.fault.empty()) {
    std::string fault = std::move(machine.fault);
    machine.fault.clear();
    throw Error("SIMT emulator: " + fault);
  }
}

}  // namespace kdsl::simt
