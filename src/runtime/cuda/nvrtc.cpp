// nvrtc.cpp - NVRTC through DynamicLibrary (toolkit directories, then sonames), compile CUDA C++ to PTX and cubin, logs in errors
#include "runtime/cuda/nvrtc.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <string_view>

#include <kdsl/error.h>

#include "runtime/dynamic_library.h"

namespace kdsl::nvrtc {
namespace fs = std::filesystem;

namespace {

// Toolkit library directories, from the environment and the default install.
std::vector<fs::path> toolkit_lib_dirs() {
  std::vector<fs::path> dirs;
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *v = std::getenv(var); v && *v) dirs.push_back(fs::path(v) / "lib64");
  dirs.push_back("/usr/local/cuda/lib64");
  return dirs;
}

// "libnvrtc.so.13" -> {13}, "libnvrtc.so.11.2" -> {11, 2}; nullopt for other names (builtins, alt).
std::vector<int> soname_version(const std::string &file) {
  static const std::regex pattern(R"(libnvrtc\.so\.(\d+)(?:\.(\d+))?)");
  std::smatch m;
  if (!std::regex_match(file, m, pattern)) return {};
  std::vector<int> v{std::stoi(m[1].str())};
  if (m[2].matched) v.push_back(std::stoi(m[2].str()));
  return v;
}

// True when a line of the log starts with `file` ("add.cu(") and reports an error.
bool has_error_in(const std::string &log, const std::string &file) {
  for (size_t at = 0; at < log.size();) {
    size_t end = std::min(log.find('\n', at), log.size());
    std::string_view line(log.data() + at, end - at);
    if (line.starts_with(file) && line.find("): error") != std::string_view::npos) return true;
    at = end + 1;
  }
  return false;
}

}  // namespace

void Library::check(Result result, const char *call) const {
  if (result == 0) return;
  const char *name = nvrtcGetErrorString ? nvrtcGetErrorString(result) : nullptr;
  throw Error(fmt::format("NVRTC call {} failed: {} ({}) [{}]", call, name ? name : "NVRTC_ERROR", result, path));
}

std::vector<std::string> library_candidates() {
  std::vector<std::string> out;
  if (const char *v = std::getenv("KDSL_LIBNVRTC"); v && *v) out.push_back(v);
  for (const fs::path &dir : toolkit_lib_dirs()) {
    std::error_code ec;
    std::vector<std::pair<std::vector<int>, std::string>> found;
    for (const auto &e : fs::directory_iterator(dir, ec))
      if (auto version = soname_version(e.path().filename().string()); !version.empty()) found.emplace_back(version, e.path().string());
    std::sort(found.rbegin(), found.rend());  // newest first
    for (auto &[version, path] : found) out.push_back(path);
  }
  for (const char *soname : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so"}) out.push_back(soname);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Library load_library(const std::string &path) {
  static constexpr detail::LibraryDescription kNvrtc{"NVRTC", "NVRTC not found", "install the CUDA toolkit's NVRTC or set KDSL_LIBNVRTC",
                                                      "NVRTC 11.2 or newer is needed"};
  detail::DynamicLibrary dynamic(path, kNvrtc);
  Library lib;
  lib.path = path;
#define NVRTC_FUNCTION(name, symbol, result, params) dynamic.bind(lib.name, symbol);
#include "runtime/cuda/nvrtc_functions.def"
  lib.check(lib.nvrtcVersion(&lib.major, &lib.minor), "nvrtcVersion");
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
    throw Error(fmt::format("NVRTC not found (tried {}); last: {}", fmt::join(tried, ", "), last));
  });
  return loaded.get();
}

Output compile(const std::string &name, const std::string &source, const std::vector<std::string> &options, const std::string &arch) {
  const Library &lib = library();
  std::vector<std::string> all = options;
  bool has_arch = std::any_of(options.begin(), options.end(), [](const std::string &o) {
    return o.starts_with("-arch") || o.starts_with("--gpu-architecture");
  });
  if (!has_arch) all.push_back("--gpu-architecture=" + arch);
  // The toolkit's headers (cuda_fp16.h, cuda_bf16.h), where they sit beside the library.
  fs::path include = fs::path(lib.path).parent_path().parent_path() / "include";
  std::error_code ec;
  if (fs::path(lib.path).has_parent_path() && fs::exists(include / "cuda_fp16.h", ec)) all.push_back("--include-path=" + include.string());
  std::vector<const char *> argv;
  for (const std::string &o : all) argv.push_back(o.c_str());

  Program program = nullptr;
  lib.check(lib.nvrtcCreateProgram(&program, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  struct Destroy {
    const Library &lib;
    Program &program;
    ~Destroy() { lib.nvrtcDestroyProgram(&program); }
  } destroy{lib, program};
  lib.check(lib.nvrtcAddNameExpression(program, name.c_str()), "nvrtcAddNameExpression");
  Result compiled = lib.nvrtcCompileProgram(program, int(argv.size()), argv.data());

  Output out;
  size_t size = 0;
  lib.check(lib.nvrtcGetProgramLogSize(program, &size), "nvrtcGetProgramLogSize");
  out.log.resize(size);
  if (size) lib.check(lib.nvrtcGetProgramLog(program, out.log.data()), "nvrtcGetProgramLog");
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  // The name expression is compiled after the source, in a map of its own: errors only there
  // mean the source compiled but does not declare the kernel.
  if (compiled != 0 && has_error_in(out.log, "__nv_name_map(") && !has_error_in(out.log, name + ".cu("))
    throw Error(fmt::format("kernel '{}': the source declares no __global__ function named '{}' (NVRTC {}.{}):\n{}", name, name, lib.major, lib.minor,
                            out.log));
  if (compiled != 0)
    throw Error(fmt::format("kernel '{}': NVRTC {}.{} failed to compile it for {} ({}):\n{}", name, lib.major, lib.minor, has_arch ? "the given -arch" : arch,
                            lib.nvrtcGetErrorString(compiled), out.log));

  const char *lowered = nullptr;
  Result named = lib.nvrtcGetLoweredName(program, name.c_str(), &lowered);
  if (named != 0 || !lowered)
    throw Error(fmt::format("kernel '{}': the source compiled but declares no __global__ function named '{}' ({})", name, name, lib.nvrtcGetErrorString(named)));
  out.lowered_name = lowered;
  lib.check(lib.nvrtcGetPTXSize(program, &size), "nvrtcGetPTXSize");
  out.ptx.resize(size);
  lib.check(lib.nvrtcGetPTX(program, out.ptx.data()), "nvrtcGetPTX");
  while (!out.ptx.empty() && out.ptx.back() == '\0') out.ptx.pop_back();
  if (lib.nvrtcGetCUBINSize(program, &size) == 0 && size > 0) {
    out.cubin.resize(size);
    lib.check(lib.nvrtcGetCUBIN(program, reinterpret_cast<char *>(out.cubin.data())), "nvrtcGetCUBIN");
  }
  return out;
}

}  // namespace kdsl::nvrtc
