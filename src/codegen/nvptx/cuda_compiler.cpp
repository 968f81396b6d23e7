// cuda_compiler.cpp - block IR to PTX and cubin: the NVIDIA backend's steps, in order
#include <fmt/format.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <kdsl/error.h>

#include "codegen/codegen.h"
#include "codegen/nvptx/assign_layouts.h"
#include "codegen/nvptx/lower_nvptx.h"
#include "codegen/nvptx/plan_pipelining.h"
#include "codegen/nvptx/ptx_compiler.h"
#include "codegen/pipeline.h"
#include "ir/printer.h"
#include "support/log.h"

namespace kdsl::codegen {
namespace {

void write_dump(const DumpOptions &dump, CompiledObject &out, const char *ext, const std::string &text) {
  if (dump.keep_text) out.stages[ext] = text;
  if (dump.dir.empty()) return;
  std::filesystem::create_directories(dump.dir);
  std::ofstream(std::filesystem::path(dump.dir) / (out.symbol + ext), std::ios::binary) << text;
}

std::string module_text(const llvm::Module &m) {
  std::string text;
  llvm::raw_string_ostream s(text);
  m.print(s, nullptr);
  return text;
}

std::string resources_text(const CompiledObject &out, const CudaCompileOptions &options) {
  const ResourceReport &r = out.resources;
  std::string text = fmt::format("arch {}\nthreads {}\ndynamic_shared_bytes {}\n", options.arch, r.threads, r.dynamic_shared_bytes);
  if (!r.assembled) return text + "ptxas not run: the PTX is left to the driver's JIT\n";
  text += fmt::format("registers {}\nspill_store_bytes {}\nspill_load_bytes {}\nstack_frame_bytes {}\nstatic_shared_bytes {}\n", r.registers,
                      r.spill_store_bytes, r.spill_load_bytes, r.stack_frame_bytes, r.static_shared_bytes);
  return text + "--- ptxas -v\n" + r.ptxas_log;
}

}  // namespace

CompiledObject compile_for_cuda(const ir::Function &traced, const std::string &symbol, const CudaCompileOptions &options, const DumpOptions &dump) {
  const TargetInfo &target = target_info(options.arch);
  CompiledObject out;
  out.symbol = symbol;
  auto start = std::chrono::steady_clock::now();
  ir::Function fn = traced;
  if (dump.ir) write_dump(dump, out, ".traced.kir", ir::print(fn));
  run_pipeline(fn);                                                                        // 1. block-IR passes
  nvptx::LayoutPlan plan = nvptx::assign_layouts(fn, target, options.num_warps);           // 2. layouts, vector widths, mma dots
  nvptx::plan_pipelining(fn, target, options.num_stages, plan);                           //    cp.async for loads feeding them
  if (dump.ir) write_dump(dump, out, ".kir", ir::print(fn));
  out.passes_ms = elapsed_ms(start);

  start = std::chrono::steady_clock::now();
  llvm::LLVMContext context;
  auto module = std::make_unique<llvm::Module>(symbol, context);
  std::unique_ptr<llvm::TargetMachine> tm = nvptx::make_nvptx_target_machine(target);
  module->setDataLayout(tm->createDataLayout());
  module->setTargetTriple(target.triple);
  nvptx::LoweringResult lowered = nvptx::lower_to_nvptx(fn, plan, target, *module, symbol);  // 3. LLVM IR for one CTA
  std::string problems;
  llvm::raw_string_ostream problem_stream(problems);
  if (llvm::verifyModule(*module, &problem_stream))
    internal_error(fmt::format("nvptx lowering of '{}' produced invalid LLVM IR: {}\n{}", fn.name, problems, module_text(*module)));
  if (dump.llvm) write_dump(dump, out, ".ll", module_text(*module));
  if (lowered.shared_bytes > target.shared_bytes_optin)
    throw Error(fmt::format("kernel '{}' needs {} bytes of shared memory per program; {} has {} (use smaller blocks)", fn.name, lowered.shared_bytes,
                            target.name, target.shared_bytes_optin));
  out.lower_ms = elapsed_ms(start);

  start = std::chrono::steady_clock::now();
  nvptx::link_and_optimize(*module, *tm, symbol);                                         // 4. libdevice, O3
  if (dump.llvm) write_dump(dump, out, ".opt.ll", module_text(*module));
  out.ptx = nvptx::emit_ptx(*module, *tm);                                                // 5. PTX
  out.resources.threads = lowered.threads;
  out.resources.dynamic_shared_bytes = lowered.shared_bytes;
  std::string ptxas = options.assemble ? nvptx::find_ptxas() : "";
  if (!ptxas.empty()) {
    out.object = nvptx::assemble_ptx(ptxas, out.ptx, target.name, out.resources);       // 6. cubin
  } else {
    out.object.assign(out.ptx.begin(), out.ptx.end());
    out.object.push_back(0);
    if (options.assemble) log_info("{}: no ptxas found ($CUDA_HOME/bin, /usr/local/cuda/bin, PATH): the driver will JIT the PTX", fn.name);
  }
  out.format = out.resources.assembled ? "cubin" : "ptx";
  out.llvm_ms = elapsed_ms(start);
  if (dump.asm_text) {
    write_dump(dump, out, ".ptx", out.ptx);
    if (out.resources.assembled) write_dump(dump, out, ".cubin", std::string(out.object.begin(), out.object.end()));
    write_dump(dump, out, ".resources.txt", resources_text(out, options));
  }
  return out;
}

}  // namespace kdsl::codegen
