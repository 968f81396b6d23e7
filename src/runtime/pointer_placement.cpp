// pointer_placement.cpp - the error for a pointer argument in the wrong memory
#include "runtime/pointer_placement.h"

#include <fmt/format.h>

#include <kdsl/error.h>

namespace kdsl::detail {

void pointer_memory_error(const std::string &kernel_name, size_t index, MemorySpace expected) {
  if (expected == MemorySpace::Device)
    throw Error(fmt::format("kernel '{}': argument {} is a host pointer; on a CUDA device pass a kdsl::Buffer allocated on it", kernel_name, index));
  throw Error(fmt::format("kernel '{}': argument {} is in a GPU's memory; on the CPU pass host memory (a kdsl::Buffer allocated on the CPU, "
                          "or a host pointer)",
                          kernel_name, index));
}

}  // namespace kdsl::detail
