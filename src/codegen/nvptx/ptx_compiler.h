// ptx_compiler.h - LLVM IR for NVPTX to PTX (LLVM's NVPTX backend) and PTX to cubin (ptxas)
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/codegen.h"
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

// The ptxas binary: $KDSL_PTXAS, $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin, PATH.
// Empty when there is none.
std::string find_ptxas();

// Assembles PTX into a cubin for `arch` with `ptxas -v` and parses its resource report.
// Throws kdsl::Error with ptxas's messages when it fails.
std::vector<uint8_t> assemble_ptx(const std::string &ptxas, const std::string &ptx, const std::string &arch, ResourceReport &report);

// Reads "Used N registers, ... N bytes smem", "N bytes stack frame, N bytes spill stores, N
// bytes spill loads" from ptxas -v output.
void parse_ptxas_report(const std::string &log, ResourceReport &report);

}  // namespace kdsl::codegen::nvptx
