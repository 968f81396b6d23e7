// module_steps.cpp - verify, print and O3, written once for every target
#include "codegen/module_steps.h"

#include <fmt/format.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>

#include <kdsl/error.h>

namespace kdsl::codegen {

void verify_lowering(const llvm::Module &m, const char *lowering, const std::string &kernel) {
  std::string problems;
  llvm::raw_string_ostream problem_stream(problems);
  if (llvm::verifyModule(m, &problem_stream))
    internal_error(fmt::format("{} lowering of '{}' produced invalid LLVM IR: {}\n{}", lowering, kernel, problems, module_text(m)));
}

std::string module_text(const llvm::Module &m) {
  std::string text;
  llvm::raw_string_ostream s(text);
  m.print(s, nullptr);
  return text;
}

void optimize_module(llvm::Module &m, llvm::TargetMachine &tm, bool slp_vectorize) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = slp_vectorize;
  llvm::PassBuilder pb(&tm, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(m, mam);
}

}  // namespace kdsl::codegen
