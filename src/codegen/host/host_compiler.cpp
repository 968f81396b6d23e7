// host_compiler.cpp - block IR to a host object file: passes, lowering, O3, machine code
#include <fmt/format.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <kdsl/error.h>

#include "codegen/codegen.h"
#include "codegen/host/lower_host.h"
#include "codegen/host/target_machine.h"
#include "codegen/pipeline.h"
#include "ir/printer.h"
#include "support/log.h"

namespace kdsl::codegen {
namespace {

void write_dump(const DumpOptions &dump, CompiledObject &out, const char *ext, const std::string &text) {
  if (dump.keep_text) out.stages[ext] = text;
  if (dump.dir.empty()) return;
  std::filesystem::create_directories(dump.dir);
  std::ofstream(std::filesystem::path(dump.dir) / (out.symbol + ext)) << text;
}

void optimize(llvm::Module &m, llvm::TargetMachine &tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  llvm::PassBuilder pb(&tm, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(m, mam);
}

}  // namespace

CompiledObject compile_for_host(const ir::Function &traced, const std::string &symbol, const DumpOptions &dump, const HostCompileOptions &options) {
  CompiledObject out;
  out.symbol = symbol;
  auto start = std::chrono::steady_clock::now();
  ir::Function fn = traced;
  if (dump.ir) write_dump(dump, out, ".traced.kir", ir::print(fn));
  run_pipeline(fn);
  if (dump.ir) write_dump(dump, out, ".kir", ir::print(fn));
  out.passes_ms = elapsed_ms(start);

  start = std::chrono::steady_clock::now();
  llvm::LLVMContext context;
  auto module = std::make_unique<llvm::Module>(symbol, context);
  std::unique_ptr<llvm::TargetMachine> tm = make_host_target_machine();
  module->setDataLayout(tm->createDataLayout());
  module->setTargetTriple(tm->getTargetTriple().str());
  lower_to_llvm(fn, *module, symbol, options.bounds_checks, options.int_dot);
  std::string problems;
  llvm::raw_string_ostream problem_stream(problems);
  if (llvm::verifyModule(*module, &problem_stream)) {
    std::string text;
    llvm::raw_string_ostream s(text);
    module->print(s, nullptr);
    internal_error(fmt::format("host lowering of '{}' produced invalid LLVM IR: {}\n{}", fn.name, problems, text));
  }
  if (dump.llvm) {
    std::string text;
    llvm::raw_string_ostream s(text);
    module->print(s, nullptr);
    write_dump(dump, out, ".ll", text);
  }
  out.lower_ms = elapsed_ms(start);

  start = std::chrono::steady_clock::now();
  optimize(*module, *tm);
  if (dump.llvm) {
    std::string text;
    llvm::raw_string_ostream s(text);
    module->print(s, nullptr);
    write_dump(dump, out, ".opt.ll", text);
  }
  out.object = emit_machine_code(*module, *tm, llvm::CodeGenFileType::ObjectFile);
  if (dump.asm_text) {
    std::vector<uint8_t> text = emit_machine_code(*module, *tm, llvm::CodeGenFileType::AssemblyFile);
    write_dump(dump, out, ".s", std::string(text.begin(), text.end()));
  }
  out.llvm_ms = elapsed_ms(start);
  return out;
}

}  // namespace kdsl::codegen
