// module_steps.h - the LLVM steps every target's compile shares: verify the lowering, print a module, optimize at O3
#pragma once
#include <string>

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

namespace kdsl::codegen {

// An internal error naming the lowering ("host", "nvptx") and the kernel, with LLVM's
// complaints and the module, when the lowering produced invalid LLVM IR.
void verify_lowering(const llvm::Module &m, const char *lowering, const std::string &kernel);

// The module as LLVM IR text, for dumps.
std::string module_text(const llvm::Module &m);

// LLVM's O3 module pipeline for the target machine (its callbacks included: NVVMReflect and
// address-space inference on NVPTX). slp_vectorize packs independent scalar operations into
// SIMD instructions: wanted on a host CPU, not for GPU threads.
void optimize_module(llvm::Module &m, llvm::TargetMachine &tm, bool slp_vectorize);

}  // namespace kdsl::codegen
