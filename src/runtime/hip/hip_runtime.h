// hip_runtime.h - AMD's HIP runtime (libamdhip64), loaded with dlopen at run time (no link-time dependency)
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace kdsl::hip {

// The few HIP types kdsl needs, ABI-compatible with hip_runtime_api.h.
using hipError_t = int;
using hipModule_t = struct ihipModule_t *;
using hipFunction_t = struct ihipModuleSymbol_t *;
using hipStream_t = struct ihipStream_t *;
using hipGraph_t = struct ihipGraph *;
using hipGraphExec_t = struct hipGraphExec *;

// hipStreamCaptureMode: relaxed lets other threads make calls that are unsafe during a
// capture (a module load, a first compile), which the capturing stream never sees.
constexpr int kStreamCaptureModeRelaxed = 2;

// hipDeviceAttribute_t numbers (ROCm 5.0 and later).
enum : int {
  kAttrMaxThreadsPerBlock = 56,
  kAttrMultiprocessorCount = 63,
  kAttrMaxSharedMemoryPerBlock = 74,
  kAttrWarpSize = 87,
};

// hipDeviceProp_t as hipGetDeviceProperties fills it (the ROCm 5 layout, which ROCm 6 keeps
// under that symbol): gcnArchName ("gfx942:sramecc+:xnack-") at this offset, within this size.
constexpr size_t kPropertiesGcnArchNameOffset = 396;
constexpr size_t kPropertiesBytes = 792;

// The runtime's entry points, one member per line of hip_functions.def.
struct Runtime {
#define HIP_FUNCTION(name, symbol, params) hipError_t(*name) params = nullptr;
#include "runtime/hip/hip_functions.def"
  const char *(*hipGetErrorName)(hipError_t) = nullptr;
  std::string library;  // where it was loaded from

  // Throws kdsl::Error "HIP runtime call <call> failed: hipError<Name> (<code>)" unless result is 0.
  void check(hipError_t result, const char *call) const;
  // Whether the stream-capture and graph entry points are all there (ROCm 5.3 and later).
  bool has_graphs() const {
    return hipStreamBeginCapture && hipStreamEndCapture && hipGraphInstantiateWithFlags && hipGraphLaunch && hipGraphExecDestroy && hipGraphDestroy;
  }
};

// Where the process's HIP runtime comes from: $KDSL_LIBAMDHIP64 where set (a fake runtime in
// tests, a ROCm outside the loader's path), else "libamdhip64.so" (ROCm, Debian's
// libamdhip64-dev), then "libamdhip64.so.6" and "libamdhip64.so.5".
std::vector<std::string> runtime_libraries();

// The process's HIP runtime, loaded on first use and initialized (hipInit). Throws
// kdsl::Error "no HIP runtime found (libamdhip64.so: <dlerror>)" when none loads; the failure
// is remembered and rethrown on every call.
const Runtime &runtime();

// Empty when runtime() loads; else the text it throws (for --device auto and tests that skip).
std::string runtime_load_error();

// Loads a runtime from `library` without caching it (tests of the error paths).
Runtime load_runtime(const std::string &library);

// hipErrorInvalidValue for 1, ...; "hipError<code>" for codes it does not know (when the
// runtime's own hipGetErrorName is not at hand).
std::string error_name(hipError_t result);

}  // namespace kdsl::hip
