// example_kernels.cpp - registers the example kernels, so kdsl-compile finds them by name through the registry, as it finds a user's
#include "src/tools/example_kernels.h"

namespace {
const kdsl::detail::KernelRegistrar examples_registered(kdsl::tools::example_registry_entries());
}  // namespace
