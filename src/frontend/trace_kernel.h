// trace_kernel.h - runs a kernel's C++ body once under a Tracer: what a launch and compile_for both trace with
#pragma once
#include <utility>
#include <vector>

#include <kdsl/kernel.h>

#include "ir/ir.h"

namespace kdsl::frontend {

// The kernel's block IR for one specialization (one class per argument), checked by the verifier.
// `extent_requirements`, when given, receives the body's expect_extent declarations.
ir::Function trace_kernel(const detail::KernelSignature &signature, const std::vector<ir::ArgClass> &classes,
                          std::vector<std::pair<int32_t, int32_t>> *extent_requirements = nullptr);

}  // namespace kdsl::frontend
