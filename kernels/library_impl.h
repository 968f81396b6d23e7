// library_impl.h - what the Library dispatch files share: compiled kernels by identity, size checks
#pragma once
#include <unordered_map>

#include <kdsl/kdsl.h>

#include "kernels/library.h"

namespace kdsl::kernels {

struct Library::Impl {
  explicit Impl(const Device &d) : device(d) {}
  Device device;
};

}  // namespace kdsl::kernels
