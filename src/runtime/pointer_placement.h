// pointer_placement.h - the error for a pointer argument in the wrong memory (a host pointer for a GPU, GPU memory for the CPU)
#pragma once
#include <cstddef>
#include <string>

#include <kdsl/device.h>

namespace kdsl::detail {

// Throws the error for argument `index` of `kernel_name` whose pointer is not in `expected`,
// the memory space of the device it is launched on.
[[noreturn]] void pointer_memory_error(const std::string &kernel_name, size_t index, MemorySpace expected);

}  // namespace kdsl::detail
