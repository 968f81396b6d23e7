// ptx_compiler.h - LLVM IR for NVPTX to PTX (LLVM's NVPTX backend) and PTX to cubin (ptxas)
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/codegen.h"
#include "codegen/nvptx/ptxas.h"
#include "codegen/target_info.h"

namespace kdsl::codegen::nvptx {

// An NVPTX target machine for `target` (its sm_XX and PTX ISA version), at O3.
std::unique_ptr<llvm::TargetMachine> make_nvptx_target_machine(const TargetInfo &target);

// Links the CUDA toolkit's libdevice into `m` when it calls __nv_* functions ($CUDA_HOME,
// $CUDA_PATH or /usr/local/cuda), internalizes everything but `keep`, and runs LLVM's O3
// pipeline for the target (NVVMReflect included). Throws kdsl::Error when libdevice is
// needed and not found.
void link_and_optimize(llvm::Module &m, llvm::TargetMachine &tm, const std::string &keep);

std::string emit_ptx(llvm::Module &m, llvm::TargetMachine &tm);

}  // namespace kdsl::codegen::nvptx
