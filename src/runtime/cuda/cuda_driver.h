// cuda_driver.h - the CUDA driver API, loaded with dlopen at run time (no link-time dependency)
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace kdsl::cuda {

// The few driver types kdsl needs, ABI-compatible with cuda.h.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;
// A TMA tensor map (cuda.h's CUtensorMap): opaque bytes the driver encodes and a kernel takes
// as a 128-byte grid-constant parameter.
struct alignas(64) CUtensorMap {
  uint64_t opaque[16];
};
static_assert(sizeof(CUtensorMap) == 128 && alignof(CUtensorMap) == 64, "CUtensorMap is 128 bytes, 64-byte aligned, as in cuda.h");

// Attribute numbers from cuda.h.
enum : int {
  kAttrMaxThreadsPerBlock = 1,
  kAttrMaxSharedPerBlock = 8,
  kAttrWarpSize = 10,
  kAttrMultiprocessorCount = 16,
  kAttrComputeCapabilityMajor = 75,
  kAttrComputeCapabilityMinor = 76,
  kAttrMaxSharedPerBlockOptin = 97,
  kFuncAttrSharedSizeBytes = 1,  // static shared memory of a kernel
  kFuncAttrMaxDynamicSharedBytes = 8,
};

// cuTensorMapEncodeTiled's enums (cuda.h: CUtensorMapDataType, CUtensorMapInterleave,
// CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill), passed as ints.
enum : int {
  kTensorMapUint8 = 0,
  kTensorMapUint16 = 1,
  kTensorMapUint32 = 2,
  kTensorMapInt32 = 3,
  kTensorMapUint64 = 4,
  kTensorMapInt64 = 5,
  kTensorMapFloat16 = 6,
  kTensorMapFloat32 = 7,
  kTensorMapFloat64 = 8,
  kTensorMapBfloat16 = 9,
  kTensorMapInterleaveNone = 0,
  kTensorMapSwizzleNone = 0,
  kTensorMapSwizzle32B = 1,
  kTensorMapSwizzle64B = 2,
  kTensorMapSwizzle128B = 3,
  kTensorMapL2Promotion128B = 2,
  kTensorMapOobFillZeros = 0,  // CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: reads outside the tensor give zeros
  // CU_STREAM_CAPTURE_MODE_RELAXED: the capturing thread may still make calls a stricter mode
  // forbids, such as loading a module.
  kStreamCaptureModeRelaxed = 2,
};

// The driver's entry points, one member per line of cuda_functions.def.
struct Driver {
#define CUDA_FUNCTION(name, symbol, params) CUresult(*name) params = nullptr;
#include "runtime/cuda/cuda_functions.def"
  std::string library;  // where it was loaded from

  // Throws kdsl::Error "<call> failed: CUDA_ERROR_<NAME> (<code>)" unless result is 0.
  void check(CUresult result, const char *call) const;
};

// Where the process's driver comes from: $KDSL_LIBCUDA where set (a fake driver in tests, a
// driver outside the loader's path), else "libcuda.so.1". Everything that opens the driver
// (devices, kdsl-run, tests asking whether one is present) goes through driver() below, so
// this one choice holds for all of them.
std::string driver_library();

// The process's driver, loaded on first use from driver_library() and initialized (cuInit).
// Throws kdsl::Error "no NVIDIA driver found (libcuda.so.1: <dlerror>)" when it cannot be
// loaded; the failure is remembered, and rethrown on every call.
const Driver &driver();

// Empty when driver() loads; else the text driver() throws. For callers that fall back
// (--device auto, tests that skip) rather than fail.
std::string driver_load_error();

// Loads a driver from `library` without caching it (for tests of the error paths).
Driver load_driver(const std::string &library);

// CUDA_ERROR_INVALID_VALUE for 1, ...; "CUDA_ERROR_<code>" for codes it does not know.
std::string error_name(CUresult result);

}  // namespace kdsl::cuda
