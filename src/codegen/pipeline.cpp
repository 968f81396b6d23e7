// pipeline.cpp - the compiler's table of contents: every block-IR pass in order, then each target's steps to machine code
#include "codegen/pipeline.h"

#include <fmt/format.h>
#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <cstdlib>

#include <kdsl/error.h>

#include "codegen/amdgpu/amdgpu_target.h"
#include "codegen/amdgpu/code_object.h"
#include "codegen/codegen.h"
#include "codegen/host/i16_pair_sums.h"
#include "codegen/host/lower_host.h"
#include "codegen/host/scaled_dot.h"
#include "codegen/host/target_machine.h"
#include "codegen/module_steps.h"
#include "codegen/gpu/lower_gpu.h"
#include "codegen/gpu/plan_kernel.h"
#include "codegen/nvptx/nvptx_target.h"
#include "codegen/nvptx/ptx_compiler.h"
#include "codegen/passes/cse.h"
#include "codegen/passes/dce.h"
#include "codegen/passes/expand_tile_accesses.h"
#include "codegen/passes/fold_constants.h"
#include "codegen/passes/specialize_arguments.h"
#include "codegen/stage_dump.h"
#include "ir/printer.h"
#include "ir/verifier.h"
#include "support/log.h"

namespace kdsl::codegen {

struct Pass {
  const char *name;
  void (*run)(ir::Function &);
};

// Each pass on its own line; every target runs them. Target-specific steps follow in compile().
constexpr Pass kPipeline[] = {
    {"specialize_arguments", passes::specialize_arguments},
    {"fold_constants", passes::fold_constants},
    {"cse", passes::cse},
    {"dce", passes::dce},
};

void run_pipeline(ir::Function &fn) {
  static const bool time_passes = std::getenv("KDSL_TIME_PASSES") != nullptr;
  for (const Pass &pass : kPipeline) {
    auto start = std::chrono::steady_clock::now();
    pass.run(fn);
    ir::verify_or_throw(fn);
    if (time_passes) log_write(LogLevel::Info, fmt::format("{}: pass {} took {:.3f} ms", fn.name, pass.name, elapsed_ms(start)));
  }
}

namespace {

// The GPU lowering's hooks for a GPU target; null for the host.
std::unique_ptr<gpu::GpuTarget> gpu_hooks(const Target &target) {
  switch (target.kind) {
    case Target::Kind::Host: return nullptr;
    case Target::Kind::Nvptx: return std::make_unique<nvptx::NvptxTarget>(*target.gpu);
    case Target::Kind::Amdgpu: return std::make_unique<amdgpu::AmdgpuTarget>(*target.gpu);
  }
  return nullptr;
}

std::unique_ptr<llvm::TargetMachine> target_machine(const Target &target) {
  switch (target.kind) {
    case Target::Kind::Host: return make_host_target_machine();
    case Target::Kind::Nvptx: return nvptx::make_nvptx_target_machine(*target.gpu);
    case Target::Kind::Amdgpu: return amdgpu::make_amdgpu_target_machine(*target.gpu);
  }
  return nullptr;
}

const char *lowering_name(const Target &target) {
  return target.kind == Target::Kind::Nvptx ? "nvptx" : target.kind == Target::Kind::Amdgpu ? "amdgpu" : "host";
}

// LLVM's own warnings and remarks about a kernel (a loop kdsl asked to vectorize that it
// could not, for one) go to KDSL_LOG=debug, named by kernel, instead of straight to stderr,
// where they broke into tools' output; errors keep LLVM's handling.
class QuietDiagnostics final : public llvm::DiagnosticHandler {
 public:
  explicit QuietDiagnostics(std::string kernel) : kernel_(std::move(kernel)) {}
  bool handleDiagnostics(const llvm::DiagnosticInfo &info) override {
    if (info.getSeverity() == llvm::DS_Error) return false;
    // Optimization remarks nobody asked for (-pass-remarks) are dropped, as LLVM's own handler does.
    if (auto *remark = llvm::dyn_cast<llvm::DiagnosticInfoOptimizationBase>(&info); remark && !remark->isEnabled()) return true;
    std::string text;
    llvm::raw_string_ostream out(text);
    llvm::DiagnosticPrinterRawOStream printer(out);
    info.print(printer);
    log_debug("{}: LLVM: {}", kernel_, out.str());
    return true;
  }

 private:
  std::string kernel_;
};

}  // namespace

CompiledObject compile(const ir::Function &traced, const std::string &symbol, const Target &target, const Options &options, const DumpOptions &dump) {
  const bool gpu = target.is_gpu();
  const bool nvidia = target.kind == Target::Kind::Nvptx, amd = target.kind == Target::Kind::Amdgpu;
  CompiledObject out;
  out.symbol = symbol;
  StageDump stages(dump, out);
  auto start = std::chrono::steady_clock::now();
  ir::Function fn = traced;
  if (dump.ir) stages.write(".traced.kir", ir::print(fn));
  run_pipeline(fn);                                                                   // 1. block-IR passes
  gpu::LayoutPlan plan;
  if (gpu) {
    plan = gpu::plan_gpu_kernel(fn, *target.gpu, options.num_warps, options.num_stages);  // 2. GPU: TMA tiles, layouts, vector widths,
                                                                                      //    mma dots, async copies for loads feeding them
  } else {
    passes::expand_tile_accesses(fn);                                                 //    host: tile loads and stores as masked ones
    fuse_scaled_dots(fn);                                                             //    host: byte dots scaled by column as one op
  }
  if (dump.ir) stages.write(".kir", ir::print(fn));
  out.passes_ms = elapsed_ms(start);

  start = std::chrono::steady_clock::now();
  llvm::LLVMContext context;
  context.setDiagnosticHandler(std::make_unique<QuietDiagnostics>(fn.name));
  llvm::Module module(symbol, context);
  std::unique_ptr<llvm::TargetMachine> tm = target_machine(target);
  module.setDataLayout(tm->createDataLayout());
  module.setTargetTriple(tm->getTargetTriple().str());
  gpu::LoweringResult lowered;
  std::unique_ptr<gpu::GpuTarget> hooks = gpu_hooks(target);
  if (gpu) lowered = gpu::lower_to_gpu(fn, plan, *hooks, module, symbol);             // 3. LLVM IR: one block of threads per program,
  else lower_to_llvm(fn, module, symbol, options.bounds_checks, options.int_dot);  //    or a loop over programs on the host
  verify_lowering(module, lowering_name(target), fn.name);
  if (dump.llvm) stages.write(".ll", module_text(module));
  if (gpu && lowered.shared_bytes > target.gpu->shared_bytes_optin)
    throw Error(fmt::format("kernel '{}' needs {} bytes of shared memory per program; {} has {} (use smaller blocks)", fn.name, lowered.shared_bytes,
                            target.gpu->name, target.gpu->shared_bytes_optin));
  out.lower_ms = elapsed_ms(start);

  start = std::chrono::steady_clock::now();
  if (nvidia) nvptx::link_libdevice(module, symbol);                                  // 4. GPU: libdevice math (NVIDIA)
  if (amd) amdgpu::link_device_libs(module, *target.gpu, symbol);                     //    or ocml (AMD)
  optimize_module(module, *tm, /*slp_vectorize=*/!gpu);                               // 5. O3
  if (!gpu) sum_pair_products_in_i16(module);                                         //    host: dot4's pair sums added in i16
  if (dump.llvm) stages.write(".opt.ll", module_text(module));
  if (nvidia) nvptx::emit_gpu_code(module, *tm, *target.gpu, lowered, options.assemble, fn.name, out, stages);  // 6. PTX, cubin,
  else if (amd) amdgpu::emit_code_object(module, *tm, *target.gpu, lowered, fn.name, out, stages);             //    HSACO
  else emit_host_object(module, *tm, out, stages);                                    //    or a host object
  out.llvm_ms = elapsed_ms(start);
  out.warnings = plan.warnings;
  out.tensor_maps = lowered.tensor_maps;
  if (gpu)
    if (std::optional<std::string> spilled = spill_warning(out.resources, fn.name, target.gpu->name)) out.warnings.push_back(*spilled);
  for (const std::string &w : out.warnings) log_warn("{}", w);
  return out;
}

}  // namespace kdsl::codegen
