// hip_runtime.cpp - the HIP runtime from $KDSL_LIBAMDHIP64 or libamdhip64.so through DynamicLibrary, the entry points of hip_functions.def, errors by name
#include "runtime/hip/hip_runtime.h"

#include <fmt/format.h>

#include <cstdlib>

#include <kdsl/error.h>

#include "runtime/dynamic_library.h"

namespace kdsl::hip {

std::string error_name(hipError_t result) {
  switch (result) {
    case 0: return "hipSuccess";
    case 1: return "hipErrorInvalidValue";
    case 2: return "hipErrorOutOfMemory";
    case 3: return "hipErrorNotInitialized";
    case 98: return "hipErrorInvalidDeviceFunction";
    case 100: return "hipErrorNoDevice";
    case 101: return "hipErrorInvalidDevice";
    case 200: return "hipErrorInvalidImage";
    case 209: return "hipErrorNoBinaryForGpu";
    case 500: return "hipErrorNotFound";
    case 700: return "hipErrorIllegalAddress";
    case 719: return "hipErrorLaunchFailure";
    default: return fmt::format("hipError{}", result);
  }
}

void Runtime::check(hipError_t result, const char *call) const {
  if (result == 0) return;
  const char *name = hipGetErrorName ? hipGetErrorName(result) : nullptr;
  throw Error(fmt::format("HIP runtime call {} failed: {} ({}) [runtime {}]", call, name && *name ? name : error_name(result), result, library));
}

Runtime load_runtime(const std::string &library) {
  static constexpr detail::LibraryDescription kRuntime{"the HIP runtime", "no HIP runtime found",
                                                        "AMD GPUs are unavailable, the CPU device still works (install ROCm, or Debian's libamdhip64-5)",
                                                        "HIP runtime too old for kdsl; kdsl needs ROCm 5.0 or newer"};
  detail::DynamicLibrary lib(library, kRuntime);
  Runtime r;
  r.library = library;
#define HIP_FUNCTION(name, symbol, params) lib.bind(r.name, symbol);
#define HIP_OPTIONAL_FUNCTION(name, symbol, params) lib.bind_optional(r.name, symbol);
#include "runtime/hip/hip_functions.def"
  lib.bind(r.hipGetErrorName, "hipGetErrorName");
  r.check(r.hipInit(0), "hipInit");
  return r;
}

std::vector<std::string> runtime_libraries() {
  const char *override_path = std::getenv("KDSL_LIBAMDHIP64");
  if (override_path && *override_path) return {override_path};
  return {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
}

namespace {
// The first library that opens; the first one's failure where none does (the one a user acts on).
Runtime load_first() {
  std::vector<std::string> candidates = runtime_libraries();
  std::string first_failure;
  for (const std::string &library : candidates) {
    try {
      return load_runtime(library);
    } catch (const Error &e) {
      std::string what = e.what();
      // A library that opened and then failed (hipInit: no device) is the answer, not a miss.
      if (what.find("no HIP runtime found") == std::string::npos) throw;
      if (first_failure.empty()) first_failure = what;
    }
  }
  throw Error(first_failure);
}

detail::LoadedOnce<Runtime> &process_runtime() {
  static detail::LoadedOnce<Runtime> loaded([] { return load_first(); });
  return loaded;
}
}  // namespace

const Runtime &runtime() { return process_runtime().get(); }

std::string runtime_load_error() { return process_runtime().failure(); }

}  // namespace kdsl::hip
