// hiprtc.cpp - hipRTC through DynamicLibrary (ROCm's directories, then sonames), compile HIP C++ to a code object, logs in errors
#include "runtime/hip/hiprtc.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <kdsl/error.h>

#include "runtime/dynamic_library.h"

namespace kdsl::hiprtc {
namespace fs = std::filesystem;

void Library::check(Result result, const char *call) const {
  if (result == 0) return;
  const char *name = hiprtcGetErrorString ? hiprtcGetErrorString(result) : nullptr;
  throw Error(fmt::format("hipRTC call {} failed: {} ({}) [{}]", call, name ? name : "HIPRTC_ERROR", result, path));
}

std::vector<std::string> library_candidates() {
  std::vector<std::string> out;
  if (const char *v = std::getenv("KDSL_LIBHIPRTC"); v && *v) out.push_back(v);
  std::vector<fs::path> dirs;
  if (const char *v = std::getenv("ROCM_PATH"); v && *v) dirs.push_back(fs::path(v) / "lib");
  dirs.push_back("/opt/rocm/lib");
  for (const fs::path &dir : dirs) {
    std::error_code ec;
    if (fs::exists(dir / "libhiprtc.so", ec)) out.push_back((dir / "libhiprtc.so").string());
  }
  for (const char *soname : {"libhiprtc.so", "libhiprtc.so.6", "libhiprtc.so.5"}) out.push_back(soname);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Library load_library(const std::string &path) {
  static constexpr detail::LibraryDescription kHiprtc{"hipRTC", "hipRTC not found", "install ROCm's hipRTC (libhiprtc) or set KDSL_LIBHIPRTC",
                                                       "hipRTC from ROCm 5.0 or newer is needed"};
  detail::DynamicLibrary dynamic(path, kHiprtc);
  Library lib;
  lib.path = path;
#define HIPRTC_FUNCTION(name, symbol, result, params) dynamic.bind(lib.name, symbol);
#include "runtime/hip/hiprtc_functions.def"
  lib.check(lib.hiprtcVersion(&lib.major, &lib.minor), "hiprtcVersion");
  return lib;
}

const Library &library() {
  static detail::LoadedOnce<Library> loaded([] {
    std::vector<std::string> tried;
    std::string last;
    for (const std::string &candidate : library_candidates()) {
      try {
        return load_library(candidate);
      } catch (const Error &e) {
        tried.push_back(candidate);
        last = e.what();
      }
    }
    throw Error(fmt::format("hipRTC not found (tried {}); last: {}", fmt::join(tried, ", "), last));
  });
  return loaded.get();
}

Output compile(const std::string &name, const std::string &source, const std::vector<std::string> &options, const std::string &arch) {
  const Library &lib = library();
  std::vector<std::string> all = options;
  bool has_arch = std::any_of(options.begin(), options.end(), [](const std::string &o) { return o.starts_with("--offload-arch"); });
  if (!has_arch) all.push_back("--offload-arch=" + arch);
  std::vector<const char *> argv;
  for (const std::string &o : all) argv.push_back(o.c_str());

  Program program = nullptr;
  lib.check(lib.hiprtcCreateProgram(&program, source.c_str(), (name + ".hip").c_str(), 0, nullptr, nullptr), "hiprtcCreateProgram");
  struct Destroy {
    const Library &lib;
    Program &program;
    ~Destroy() { lib.hiprtcDestroyProgram(&program); }
  } destroy{lib, program};
  lib.check(lib.hiprtcAddNameExpression(program, name.c_str()), "hiprtcAddNameExpression");
  Result compiled = lib.hiprtcCompileProgram(program, int(argv.size()), argv.data());

  Output out;
  size_t size = 0;
  lib.check(lib.hiprtcGetProgramLogSize(program, &size), "hiprtcGetProgramLogSize");
  out.log.resize(size);
  if (size) lib.check(lib.hiprtcGetProgramLog(program, out.log.data()), "hiprtcGetProgramLog");
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  if (compiled != 0)
    throw Error(fmt::format("kernel '{}': hipRTC {}.{} failed to compile it for {} ({}):\n{}", name, lib.major, lib.minor, has_arch ? "the given --offload-arch" : arch,
                            lib.hiprtcGetErrorString(compiled), out.log));

  const char *lowered = nullptr;
  Result named = lib.hiprtcGetLoweredName(program, name.c_str(), &lowered);
  if (named != 0 || !lowered)
    throw Error(fmt::format("kernel '{}': the source compiled but declares no __global__ function named '{}' ({})", name, name, lib.hiprtcGetErrorString(named)));
  out.lowered_name = lowered;
  lib.check(lib.hiprtcGetCodeSize(program, &size), "hiprtcGetCodeSize");
  out.code.resize(size);
  lib.check(lib.hiprtcGetCode(program, reinterpret_cast<char *>(out.code.data())), "hiprtcGetCode");
  return out;
}

}  // namespace kdsl::hiprtc
