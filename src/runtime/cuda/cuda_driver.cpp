// cuda_driver.cpp - the driver from $KDSL_LIBCUDA or "libcuda.so.1" through DynamicLibrary, the entry points of cuda_functions.def, errors by name
#include "runtime/cuda/cuda_driver.h"

#include <fmt/format.h>

#include <cstdlib>

#include <kdsl/error.h>

#include "runtime/dynamic_library.h"

namespace kdsl::cuda {

std::string error_name(CUresult result) {
  switch (result) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 4: return "CUDA_ERROR_DEINITIALIZED";
    case 34: return "CUDA_ERROR_STUB_LIBRARY";
    case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 101: return "CUDA_ERROR_INVALID_DEVICE";
    case 200: return "CUDA_ERROR_INVALID_IMAGE";
    case 201: return "CUDA_ERROR_INVALID_CONTEXT";
    case 209: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case 218: return "CUDA_ERROR_INVALID_PTX";
    case 222: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
    case 400: return "CUDA_ERROR_INVALID_HANDLE";
    case 500: return "CUDA_ERROR_NOT_FOUND";
    case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 701: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    case 702: return "CUDA_ERROR_LAUNCH_TIMEOUT";
    case 719: return "CUDA_ERROR_LAUNCH_FAILED";
    case 900: return "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED";
    case 901: return "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED";
    case 906: return "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT";
    case 999: return "CUDA_ERROR_UNKNOWN";
    default: return fmt::format("CUDA_ERROR_{}", result);
  }
}

void Driver::check(CUresult result, const char *call) const {
  if (result == 0) return;
  const char *name = nullptr;
  std::string text = cuGetErrorName && cuGetErrorName(result, &name) == 0 && name ? name : error_name(result);
  throw Error(fmt::format("CUDA driver call {} failed: {} ({}) [driver {}]", call, text, result, library));
}

Driver load_driver(const std::string &library) {
  static constexpr detail::LibraryDescription kDriver{"the NVIDIA driver", "no NVIDIA driver found",
                                                       "CUDA devices are unavailable, the CPU device still works",
                                                       "driver too old for kdsl; update it"};
  detail::DynamicLibrary lib(library, kDriver);
  Driver d;
  d.library = library;
#define CUDA_FUNCTION(name, symbol, params) lib.bind(d.name, symbol);
#define CUDA_OPTIONAL_FUNCTION(name, symbol, params) lib.bind_optional(d.name, symbol);
#include "runtime/cuda/cuda_functions.def"
  d.check(d.cuInit(0), "cuInit");
  return d;
}

std::string driver_library() {
  const char *override_path = std::getenv("KDSL_LIBCUDA");
  return override_path && *override_path ? override_path : "libcuda.so.1";
}

namespace {
detail::LoadedOnce<Driver> &process_driver() {
  static detail::LoadedOnce<Driver> loaded([] { return load_driver(driver_library()); });
  return loaded;
}
}  // namespace

const Driver &driver() { return process_driver().get(); }

std::string driver_load_error() { return process_driver().failure(); }

}  // namespace kdsl::cuda
