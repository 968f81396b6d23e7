// nvrtc.h - NVIDIA's run-time CUDA C++ compiler, loaded with dlopen (no link-time dependency)
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kdsl::nvrtc {

using Result = int;
using Program = struct NvrtcProgram *;

// NVRTC's entry points, one member per line of nvrtc_functions.def.
struct Library {
#define NVRTC_FUNCTION(name, symbol, result, params) result(*name) params = nullptr;
#include "runtime/cuda/nvrtc_functions.def"
  std::string path;  // where it was loaded from
  int major = 0, minor = 0;

  // Throws kdsl::Error "NVRTC call <call> failed: NVRTC_ERROR_<NAME> (<code>)" unless result is 0.
  void check(Result result, const char *call) const;
};

// Where the process looks for NVRTC, in order: $KDSL_LIBNVRTC; libnvrtc.so.<version> (the
// newest) in $CUDA_HOME/lib64, $CUDA_PATH/lib64 and /usr/local/cuda/lib64; then the sonames
// libnvrtc.so.13, .12, .11.2 and libnvrtc.so through the dynamic loader's path.
std::vector<std::string> library_candidates();

// The process's NVRTC, loaded on first use from the first candidate that loads. Throws
// kdsl::Error "NVRTC not found (tried ...)" naming every candidate and the last reason; the
// failure is remembered.
const Library &library();

// Loads NVRTC from `path` without caching it (for tests of the error paths).
Library load_library(const std::string &path);

struct Output {
  std::string lowered_name;    // the kernel's symbol in the module (mangled for C++ names)
  std::string ptx;
  std::vector<uint8_t> cubin;  // empty when the options name a virtual architecture (compute_XX)
  std::string log;             // NVRTC's warnings
};

// Compiles `source` and the kernel `name` in it (an extern "C" name or a C++ name expression
// such as "scale<float>") for `arch` ("sm_90"; -arch from `options` wins). Throws kdsl::Error
// "kernel '<name>': NVRTC failed to compile ... :" followed by NVRTC's log, which names the
// line of each error.
Output compile(const std::string &name, const std::string &source, const std::vector<std::string> &options, const std::string &arch);

}  // namespace kdsl::nvrtc
