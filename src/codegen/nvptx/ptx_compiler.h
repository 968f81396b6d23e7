// ptx_compiler.h - the NVPTX steps of the pipeline: target machine, libdevice, PTX (LLVM's NVPTX backend), cubin (ptxas)
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/codegen.h"
#include "codegen/gpu/lower_gpu.h"
#include "codegen/nvptx/ptxas.h"
#include "codegen/target_info.h"

namespace kdsl::codegen {
class StageDump;
}

namespace kdsl::codegen::nvptx {

// An NVPTX target machine for `target` (its sm_XX and PTX ISA version), at O3.
std::unique_ptr<llvm::TargetMachine> make_nvptx_target_machine(const TargetInfo &target);

// Links the CUDA toolkit's libdevice into `m` when it calls __nv_* functions ($CUDA_HOME,
// $CUDA_PATH or /usr/local/cuda) and internalizes everything but `keep`, ready for O3
// (whose NVVMReflect resolves libdevice's __nvvm_reflect). Throws kdsl::Error when libdevice
// is needed and not found.
void link_libdevice(llvm::Module &m, const std::string &keep);

std::string emit_ptx(llvm::Module &m, llvm::TargetMachine &tm);

// The optimized module to PTX and, where ptxas is found and `assemble` asks, a cubin with
// ptxas's resource report (cuda_compiler.cpp); the code's format, threads and dynamic
// shared memory into `out`. Dumps .ptx, .cubin and .resources.txt.
void emit_gpu_code(llvm::Module &m, llvm::TargetMachine &tm, const TargetInfo &target, const gpu::LoweringResult &lowered, bool assemble,
                   const std::string &kernel, CompiledObject &out, StageDump &stages);

}  // namespace kdsl::codegen::nvptx
