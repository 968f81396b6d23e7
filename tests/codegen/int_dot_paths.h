// int_dot_paths.h - the host's integer-dot paths (codegen::IntDotPath) a test can force on this CPU, and a kernel compiled and run with one
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "ir/ir.h"

namespace kdsl_test {

inline bool host_has(const char *feature) { return kdsl::codegen::host_target().has_feature(feature); }

// The forced paths this CPU can run (Auto is what a launch on the CPU device uses).
inline std::vector<kdsl::codegen::IntDotPath> runnable_int_dot_paths() {
  std::vector<kdsl::codegen::IntDotPath> paths{kdsl::codegen::IntDotPath::Portable};
#if defined(__x86_64__)
  if (host_has("avx2")) paths.push_back(kdsl::codegen::IntDotPath::Pmaddwd);
  if (host_has("avxvnni") || (host_has("avx512vnni") && host_has("avx512vl"))) paths.push_back(kdsl::codegen::IntDotPath::Vnni);
#endif
  return paths;
}

inline const char *int_dot_path_name(kdsl::codegen::IntDotPath p) {
  switch (p) {
    case kdsl::codegen::IntDotPath::Vnni: return "vnni";
    case kdsl::codegen::IntDotPath::Pmaddwd: return "pmaddwd";
    case kdsl::codegen::IntDotPath::Portable: return "portable";
    default: return "auto";
  }
}

// Compiles fn for the host with the given integer-dot path and runs it over `programs` programs.
inline void run_with_int_dot_path(const kdsl::ir::Function &fn, kdsl::codegen::IntDotPath path, const std::string &symbol, std::vector<uint64_t> args,
                                  int64_t programs) {
  kdsl::codegen::Options options;
  options.int_dot = path;
  kdsl::codegen::CompiledObject object = kdsl::codegen::compile(fn, symbol, kdsl::codegen::Target::host(), options);
  kdsl::codegen::HostEntry entry = kdsl::codegen::load_host_object(object.object, symbol);
  const int32_t grid[3] = {int32_t(programs), 1, 1};
  entry(args.data(), 0, programs, grid);
}

}  // namespace kdsl_test
