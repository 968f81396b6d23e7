// compile_target.h - a target as the run time compiles for it: codegen's Options from a kernel's, and the cache identity without a device
#pragma once
#include <kdsl/kernel.h>

#include "codegen/codegen.h"

namespace kdsl::detail {

// What codegen::compile is given for a kernel's options: num_warps and num_stages as asked,
// bounds checks where `checked`, ptxas where found.
codegen::Options codegen_options(const CompileOptions &options, bool checked);

// The cache identity of code compiled for `target` where no device is at hand (compile_for):
// what a device of that target reports as Backend::target(), so both compute one key.
codegen::TargetDesc cache_identity(const codegen::Target &target);

}  // namespace kdsl::detail
