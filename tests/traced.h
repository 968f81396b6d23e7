// traced.h - a kernel's block IR as the tracer records it, for tests that read or lower the IR itself
#pragma once
#include <vector>

#include <kdsl/kdsl.h>

#include "frontend/tracer.h"

namespace kdsl_test {

template <auto K>
kdsl::ir::Function traced(std::vector<kdsl::ir::ArgClass> classes = {}) {
  using Params = kdsl::detail::kernel_params<decltype(K)>;
  kdsl::frontend::Tracer tracer(kdsl::detail::kernel_name<K>(), Params::types(), classes);
  Params::template trace<K>(tracer.argument_values());
  return tracer.finish();
}

}  // namespace kdsl_test
