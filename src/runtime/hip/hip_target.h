// hip_target.h - an AMD GPU target's cache identity: the gfx architecture and the tools that shape its code (ld.lld, ocml)
#pragma once
#include "codegen/codegen.h"
#include "codegen/target_info.h"

namespace kdsl::detail {

// The cache identity of code compiled for `info` (gfx90a, gfx942, ...), as a HIP device of
// that architecture reports target(): backend "hip", arch info.name, features the toolchain
// ("ld.lld 19.1.7; ocml <16 hex digits>", "none" for what is absent), so that a new linker
// or device library compiles afresh instead of loading what the old one made.
codegen::TargetDesc hip_target(const codegen::TargetInfo &info);

// The toolchain part alone, remembered per file.
std::string hip_toolchain_features();

}  // namespace kdsl::detail
