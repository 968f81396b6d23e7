// cuda_target.cpp - a CUDA architecture's cache identity, toolkit included
#include "runtime/cuda/cuda_target.h"

#include "runtime/cuda/cuda_toolchain.h"

namespace kdsl::detail {

codegen::TargetDesc cuda_target(const codegen::TargetInfo &info, const std::string &arch) {
  codegen::TargetDesc target;
  target.backend = "cuda";
  target.arch = arch;
  target.triple = info.triple;
  target.features = cuda::toolchain_features();
  return target;
}

}  // namespace kdsl::detail
