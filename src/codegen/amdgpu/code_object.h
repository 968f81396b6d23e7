// code_object.h - the AMDGPU steps of the pipeline: target machine, ocml linking, object and assembly (LLVM's AMDGPU backend), HSACO (ld.lld), resources
#pragma once
#include <memory>
#include <string>

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include "codegen/codegen.h"
#include "codegen/gpu/lower_gpu.h"
#include "codegen/target_info.h"

namespace kdsl::codegen {
class StageDump;
}

namespace kdsl::codegen::amdgpu {

// An amdgcn-amd-amdhsa target machine for `target` (its gfx name and wave size), at O3.
std::unique_ptr<llvm::TargetMachine> make_amdgpu_target_machine(const TargetInfo &target);

// Links ROCm's ocml into `m` when it calls __ocml_* functions, with the oclc control
// constants ocml reads (no fast math, denormals kept, correctly rounded sqrt, the target's
// wave size and ISA version) defined here rather than taken from the oclc_*.bc files, which
// ROCm ships only for the ISAs of its own release. Then internalizes everything but `keep`,
// ready for O3. Throws kdsl::Error naming the package when ocml is needed and not found;
// a kernel without such calls never needs it.
void link_device_libs(llvm::Module &m, const TargetInfo &target, const std::string &keep);

// The optimized module to a relocatable object and its assembly (LLVM's AMDGPU backend),
// then ld.lld to a code object (format "hsaco"), its resources read back from the object's
// amdhsa metadata; threads and dynamic LDS into `out`. Dumps .amdgcn (the assembly), .hsaco
// and .resources.txt. Throws kdsl::Error when ld.lld is missing or fails.
void emit_code_object(llvm::Module &m, llvm::TargetMachine &tm, const TargetInfo &target, const gpu::LoweringResult &lowered, const std::string &kernel,
                      CompiledObject &out, StageDump &stages);

}  // namespace kdsl::codegen::amdgpu
