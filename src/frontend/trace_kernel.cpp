// trace_kernel.cpp - runs a kernel's C++ body once under a Tracer
#include "frontend/trace_kernel.h"

#include "frontend/tracer.h"

namespace kdsl::frontend {

ir::Function trace_kernel(const detail::KernelSignature &signature, const std::vector<ir::ArgClass> &classes,
                          std::vector<std::pair<int32_t, int32_t>> *extent_requirements) {
  return trace_kernel(signature.name, signature.params, classes, signature.trace, extent_requirements);  // errors name the kernel
}

}  // namespace kdsl::frontend
