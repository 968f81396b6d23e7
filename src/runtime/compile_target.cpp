// compile_target.cpp - codegen options from a kernel's, and each target kind's cache identity
#include "runtime/compile_target.h"

#include <kdsl/error.h>

#include "runtime/cuda/cuda_target.h"
#include "runtime/hip/hip_target.h"

namespace kdsl::detail {

codegen::Options codegen_options(const CompileOptions &options, bool checked) {
  codegen::Options out;
  out.num_warps = options.num_warps;
  out.num_stages = options.num_stages;
  out.bounds_checks = checked;
  return out;
}

codegen::TargetDesc cache_identity(const codegen::Target &target) {
  switch (target.kind) {
    case codegen::Target::Kind::Host: return codegen::host_target();
    case codegen::Target::Kind::Nvptx: return cuda_target(*target.gpu, target.gpu->name);
    case codegen::Target::Kind::Amdgpu: return hip_target(*target.gpu);
  }
  internal_error("cache_identity: a target kind without a backend");
}

}  // namespace kdsl::detail
