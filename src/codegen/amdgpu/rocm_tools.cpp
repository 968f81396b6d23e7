// rocm_tools.cpp - finds ld.lld and the device libraries, runs ld.lld as a subprocess
#include "codegen/amdgpu/rocm_tools.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <kdsl/error.h>

namespace kdsl::codegen::amdgpu {
namespace fs = std::filesystem;
namespace {

std::string read_file(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string on_path(const char *name) {
  if (const char *path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');)
      if (!dir.empty() && fs::exists(fs::path(dir) / name)) return (fs::path(dir) / name).string();
  }
  return {};
}

std::string quoted(const std::string &s) { return "'" + std::regex_replace(s, std::regex("'"), "'\\''") + "'"; }

std::vector<std::string> device_lib_dirs() {
  std::vector<std::string> dirs;
  if (const char *v = std::getenv("ROCM_PATH"); v && *v) dirs.push_back((fs::path(v) / "amdgcn" / "bitcode").string());
  dirs.push_back("/opt/rocm/amdgcn/bitcode");
  dirs.push_back("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode");
  return dirs;
}

}  // namespace

std::string find_lld() {
  if (const char *v = std::getenv("KDSL_LLD")) return *v && fs::exists(v) ? v : "";
  if (fs::exists("/usr/lib/llvm-19/bin/ld.lld")) return "/usr/lib/llvm-19/bin/ld.lld";
  return on_path("ld.lld-19");
}

std::string lld_search_text() {
  if (const char *v = std::getenv("KDSL_LLD")) return fmt::format("$KDSL_LLD ('{}'; unset it to search for Debian's lld-19)", v);
  return "/usr/lib/llvm-19/bin/ld.lld and ld.lld-19 on PATH (install Debian's lld-19, or set KDSL_LLD)";
}

std::string find_device_libs() {
  if (const char *v = std::getenv("KDSL_ROCM_DEVICE_LIBS")) return *v && fs::exists(fs::path(v) / "ocml.bc") ? v : "";
  for (const std::string &dir : device_lib_dirs())
    if (fs::exists(fs::path(dir) / "ocml.bc")) return dir;
  return {};
}

std::string device_libs_search_text() {
  if (const char *v = std::getenv("KDSL_ROCM_DEVICE_LIBS"))
    return fmt::format("$KDSL_ROCM_DEVICE_LIBS ('{}'; unset it to search for ROCm or Debian's rocm-device-libs)", v);
  std::string dirs;
  for (const std::string &dir : device_lib_dirs()) dirs += (dirs.empty() ? "" : ", ") + dir;
  return dirs + " (install Debian's rocm-device-libs, or set ROCM_PATH or KDSL_ROCM_DEVICE_LIBS)";
}

std::vector<uint8_t> link_code_object(const std::string &lld, const std::vector<uint8_t> &object, const std::string &kernel) {
  std::string pattern = (fs::temp_directory_path() / "kdsl-lld-XXXXXX").string();
  if (!mkdtemp(pattern.data())) throw Error(fmt::format("could not create a temporary folder for ld.lld: {}", std::strerror(errno)));
  fs::path dir = pattern;
  std::ofstream(dir / "kernel.o", std::ios::binary).write(reinterpret_cast<const char *>(object.data()), std::streamsize(object.size()));
  std::string command = fmt::format("{} -shared -o {} {} > {} 2>&1", quoted(lld), quoted((dir / "kernel.hsaco").string()), quoted((dir / "kernel.o").string()),
                                    quoted((dir / "lld.log").string()));
  int status = std::system(command.c_str());
  std::string log = read_file(dir / "lld.log"), hsaco = read_file(dir / "kernel.hsaco");
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  if (status != 0 || hsaco.empty())
    throw Error(fmt::format("ld.lld ({}) failed to link the AMDGPU code object of kernel '{}' (exit status {}):\n{}", lld, kernel, WEXITSTATUS(status), log));
  return {hsaco.begin(), hsaco.end()};
}

std::string lld_version(const std::string &lld) {
  FILE *pipe = ::popen((quoted(lld) + " --version 2>&1").c_str(), "r");
  if (!pipe) return "unknown";
  std::string out;
  char buffer[512];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  if (::pclose(pipe) != 0) return "unknown";
  std::smatch m;
  if (std::regex_search(out, m, std::regex(R"(LLD ([0-9][0-9.]*))"))) return m[1].str();
  std::string line = out.substr(0, out.find('\n'));
  return line.empty() ? "unknown" : line;
}

}  // namespace kdsl::codegen::amdgpu
