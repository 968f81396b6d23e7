// pipeline.cpp - the compiler's table of contents: every block-IR pass in order, then each target's steps to machine code
#include "codegen/pipeline.h"

#include <fmt/format.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <chrono>
#include <cstdlib>

#include <kdsl/error.h>

#include "codegen/codegen.h"
#include "codegen/host/lower_host.h"
#include "codegen/host/target_machine.h"
#include "codegen/module_steps.h"
#include "codegen/nvptx/assign_layouts.h"
#include "codegen/nvptx/lower_nvptx.h"
#include "codegen/nvptx/plan_pipelining.h"
#include "codegen/nvptx/ptx_compiler.h"
#include "codegen/passes/cse.h"
#include "codegen/passes/dce.h"
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

CompiledObject compile(const ir::Function &traced, const std::string &symbol, const Target &target, const Options &options, const DumpOptions &dump) {
  const bool gpu = target.kind == Target::Kind::Nvptx;
  CompiledObject out;
  out.symbol = symbol;
  StageDump stages(dump, out);
  auto start = std::chrono::steady_clock::now();
  ir::Function fn = traced;
  if (dump.ir) stages.write(".traced.kir", ir::print(fn));
  run_pipeline(fn);                                                                   // 1. block-IR passes
  nvptx::LayoutPlan plan;
  if (gpu) {
    plan = nvptx::assign_layouts(fn, *target.gpu, options.num_warps);                 // 2. GPU: layouts, vector widths, mma dots,
    nvptx::plan_pipelining(fn, *target.gpu, options.num_stages, plan);                //    cp.async for loads feeding them
  }
  if (dump.ir) stages.write(".kir", ir::print(fn));
  out.passes_ms = elapsed_ms(start);

  start = std::chrono::steady_clock::now();
  llvm::LLVMContext context;
  llvm::Module module(symbol, context);
  std::unique_ptr<llvm::TargetMachine> tm = gpu ? nvptx::make_nvptx_target_machine(*target.gpu) : make_host_target_machine();
  module.setDataLayout(tm->createDataLayout());
  module.setTargetTriple(tm->getTargetTriple().str());
  nvptx::LoweringResult lowered;
  if (gpu) lowered = nvptx::lower_to_nvptx(fn, plan, *target.gpu, module, symbol);   // 3. LLVM IR: one CTA per program,
  else lower_to_llvm(fn, module, symbol, options.bounds_checks, options.int_dot);  //    or a loop over programs on the host
  verify_lowering(module, gpu ? "nvptx" : "host", fn.name);
  if (dump.llvm) stages.write(".ll", module_text(module));
  if (gpu && lowered.shared_bytes > target.gpu->shared_bytes_optin)
    throw Error(fmt::format("kernel '{}' needs {} bytes of shared memory per program; {} has {} (use smaller blocks)", fn.name, lowered.shared_bytes,
                            target.gpu->name, target.gpu->shared_bytes_optin));
  out.lower_ms = elapsed_ms(start);

  start = std::chrono::steady_clock::now();
  if (gpu) nvptx::link_libdevice(module, symbol);                                     // 4. GPU: libdevice math
  optimize_module(module, *tm, /*slp_vectorize=*/!gpu);                               // 5. O3
  if (dump.llvm) stages.write(".opt.ll", module_text(module));
  if (gpu) nvptx::emit_gpu_code(module, *tm, *target.gpu, lowered, options.assemble, fn.name, out, stages);  // 6. PTX, cubin
  else emit_host_object(module, *tm, out, stages);                                    //    or a host object
  out.llvm_ms = elapsed_ms(start);
  return out;
}

}  // namespace kdsl::codegen
