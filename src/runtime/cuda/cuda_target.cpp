// cuda_target.cpp - a CUDA architecture's cache identity (toolkit included) and compile options
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

codegen::CudaCompileOptions cuda_compile_options(const std::string &arch, bool assemble, const CompileOptions &options) {
  codegen::CudaCompileOptions cuda_options;
  cuda_options.arch = arch;
  cuda_options.num_warps = options.num_warps;
  cuda_options.num_stages = options.num_stages;
  cuda_options.assemble = assemble;
  return cuda_options;
}

}  // namespace kdsl::detail
