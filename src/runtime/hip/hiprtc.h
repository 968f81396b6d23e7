// hiprtc.h - AMD's run-time HIP C++ compiler (libhiprtc), loaded with dlopen (no link-time dependency)
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kdsl::hiprtc {

using Result = int;
using Program = struct HiprtcProgram *;

// hipRTC's entry points, one member per line of hiprtc_functions.def.
struct Library {
#define HIPRTC_FUNCTION(name, symbol, result, params) result(*name) params = nullptr;
#include "runtime/hip/hiprtc_functions.def"
  std::string path;  // where it was loaded from
  int major = 0, minor = 0;

  // Throws kdsl::Error "hipRTC call <call> failed: HIPRTC_ERROR_<NAME> (<code>)" unless result is 0.
  void check(Result result, const char *call) const;
};

// Where the process looks for hipRTC, in order: $KDSL_LIBHIPRTC; libhiprtc.so in
// $ROCM_PATH/lib and /opt/rocm/lib; then the sonames libhiprtc.so, .so.6 and .so.5 through
// the dynamic loader's path.
std::vector<std::string> library_candidates();

// The process's hipRTC, loaded on first use from the first candidate that loads. Throws
// kdsl::Error "hipRTC not found (tried ...)" naming every candidate and the last reason; the
// failure is remembered.
const Library &library();

// Loads hipRTC from `path` without caching it (for tests of the error paths).
Library load_library(const std::string &path);

struct Output {
  std::string lowered_name;   // the kernel's symbol in the code object (mangled for C++ names)
  std::vector<uint8_t> code;  // the code object (HSACO) for the requested gfx architecture
  std::string log;            // hipRTC's warnings
};

// Compiles `source` and the kernel `name` in it (an extern "C" name or a C++ name expression
// such as "scale<float>") for `arch` ("gfx942"; --offload-arch from `options` wins). Throws
// kdsl::Error "kernel '<name>': hipRTC failed to compile ...:" followed by hipRTC's log.
Output compile(const std::string &name, const std::string &source, const std::vector<std::string> &options, const std::string &arch);

}  // namespace kdsl::hiprtc
