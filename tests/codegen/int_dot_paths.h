// int_dot_paths.h - the host's integer-dot paths (codegen::IntDotPath) a test can force on this CPU, a kernel compiled and run with one, and its results checked on every one
#pragma once
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "ir/ir.h"

namespace kdsl_test {

inline bool host_has(const char *feature) { return kdsl::codegen::host_target().has_feature(feature); }

// Whether this CPU has 256-bit vpdpbusd (AVX-VNNI, or AVX512-VNNI with VL): the Vnni path.
inline bool host_has_vnni() { return host_has("avxvnni") || (host_has("avx512vnni") && host_has("avx512vl")); }

// The forced paths this CPU can run (Auto is what a launch on the CPU device uses).
inline std::vector<kdsl::codegen::IntDotPath> runnable_int_dot_paths() {
  std::vector<kdsl::codegen::IntDotPath> paths{kdsl::codegen::IntDotPath::Portable};
#if defined(__x86_64__)
  if (host_has("avx2")) paths.push_back(kdsl::codegen::IntDotPath::Pmaddwd);
  if (host_has_vnni()) paths.push_back(kdsl::codegen::IntDotPath::Vnni);
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

// A host buffer's address as a kernel argument.
inline uint64_t arg_of(const void *p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); }

// Fails on each element of `got` that differs from `want`'s (the first 5), naming its [row,
// column] in a result of `columns` columns and how the kernel ran.
template <class T>
void check_same_elements(const std::vector<T> &got, const std::vector<T> &want, int64_t columns, const std::string &how) {
  INFO("path ", how);
  int bad = 0;
  for (size_t i = 0; i < want.size() && bad < 5; ++i)
    if (got[i] != want[i]) {
      ++bad;
      FAIL_CHECK("[", int64_t(i) / columns, ", ", int64_t(i) % columns, "]: got ", int64_t(got[i]), ", want ", int64_t(want[i]));
    }
  CHECK(bad == 0);
}

// fn (one program) run on every path this CPU can force, its arguments `inputs` then an
// output of want.size() elements first filled with `fill`, each output checked against want.
template <class T>
void check_every_int_dot_path(const kdsl::ir::Function &fn, const std::string &symbol, std::vector<uint64_t> inputs, const std::vector<T> &want, T fill,
                              int64_t columns) {
  static int compiled = 0;  // a fresh symbol for each compile
  for (kdsl::codegen::IntDotPath path : runnable_int_dot_paths()) {
    std::vector<T> out(want.size(), fill);
    std::vector<uint64_t> args = inputs;
    args.push_back(arg_of(out.data()));
    run_with_int_dot_path(fn, path, fmt::format("{}_{}", symbol, compiled++), args, 1);
    check_same_elements(out, want, columns, int_dot_path_name(path));
  }
}

}  // namespace kdsl_test
