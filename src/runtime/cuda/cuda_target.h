// cuda_target.h - a CUDA architecture's cache identity: the arch a device reports and the toolkit that compiles for it
#pragma once
#include <string>

#include "codegen/codegen.h"
#include "codegen/target_info.h"

namespace kdsl::detail {

// The cache identity of code compiled for `info`'s architecture, as a CudaDevice of it reports
// target(): `arch` is the key's arch (info.name, or a newer GPU's "sm_100 (sm_90 PTX)"), features
// the toolkit (ptxas, libdevice). compile_for("sm_90") and a launch on an sm_90 GPU share it.
codegen::TargetDesc cuda_target(const codegen::TargetInfo &info, const std::string &arch);

}  // namespace kdsl::detail
