// cuda_target.h - a CUDA architecture as compiling for it needs it: its cache identity and codegen's options
#pragma once
#include <string>

#include <kdsl/kernel.h>

#include "codegen/codegen.h"
#include "codegen/target_info.h"

namespace kdsl::detail {

// The cache identity of code compiled for `info`'s architecture, as a CudaDevice of it reports
// target(): `arch` is the key's arch (info.name, or a newer GPU's "sm_100 (sm_90 PTX)"), features
// the toolkit (ptxas, libdevice). compile_for("sm_90") and a launch on an sm_90 GPU share it.
codegen::TargetDesc cuda_target(const codegen::TargetInfo &info, const std::string &arch);

// What compile_for_cuda is given for `arch` ("sm_90"): the launch options, and whether ptxas
// assembles a cubin (false: PTX for the driver's JIT).
codegen::CudaCompileOptions cuda_compile_options(const std::string &arch, bool assemble, const CompileOptions &options);

}  // namespace kdsl::detail
