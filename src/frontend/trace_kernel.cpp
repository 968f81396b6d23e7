// trace_kernel.cpp - runs a kernel's C++ body once under a Tracer
#include "frontend/trace_kernel.h"

#include "frontend/tracer.h"

namespace kdsl::frontend {

ir::Function trace_kernel(const detail::KernelSignature &signature, const std::vector<ir::ArgClass> &classes) {
  return trace_kernel(signature.name, signature.params, classes, signature.trace);  // errors name the kernel
}

}  // namespace kdsl::frontend
