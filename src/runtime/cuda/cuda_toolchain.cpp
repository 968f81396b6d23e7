// cuda_toolchain.cpp - ptxas --version and libdevice's hash, remembered per file, for CUDA cache keys
#include "runtime/cuda/cuda_toolchain.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>

#include "codegen/nvptx/ptxas.h"
#include "jit_cache/cache_key.h"

namespace kdsl::cuda {
namespace fs = std::filesystem;

namespace {

// path, size and modification time: a file replaced in place is another file.
std::string file_identity(const std::string &path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec) return path;
  auto time = fs::last_write_time(path, ec).time_since_epoch().count();
  return fmt::format("{}|{}|{}", path, size, time);
}

std::string remembered(const std::string &identity, auto &&compute) {
  static std::mutex mutex;
  static std::map<std::string, std::string> known;
  std::lock_guard lock(mutex);
  auto it = known.find(identity);
  if (it == known.end()) it = known.emplace(identity, compute()).first;
  return it->second;
}

}  // namespace

std::string ptxas_version(const std::string &ptxas) {
  std::string command = "'" + std::regex_replace(ptxas, std::regex("'"), "'\\''") + "' --version 2>&1";
  FILE *pipe = ::popen(command.c_str(), "r");
  if (!pipe) return "unknown";
  std::string out;
  char buffer[512];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  if (::pclose(pipe) != 0) return "unknown";
  std::smatch m;
  if (std::regex_search(out, m, std::regex(R"(release [0-9.]+, V([0-9.]+))"))) return m[1].str();
  while (!out.empty() && out.back() == '\n') out.pop_back();
  size_t last = out.rfind('\n');
  std::string line = last == std::string::npos ? out : out.substr(last + 1);
  return line.empty() ? "unknown" : line;
}

std::string toolchain_features() {
  std::string ptxas = codegen::nvptx::find_ptxas(), libdevice = codegen::nvptx::find_libdevice();
  std::string ptxas_part = ptxas.empty() ? "none" : remembered("ptxas " + file_identity(ptxas), [&] { return ptxas_version(ptxas); });
  std::string libdevice_part = libdevice.empty() ? "none" : remembered("libdevice " + file_identity(libdevice), [&] {
    std::ifstream in(libdevice, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    return jit_cache::hash_text_hex(bytes.str()).substr(0, 16);
  });
  return fmt::format("ptxas {}; libdevice {}", ptxas_part, libdevice_part);
}

}  // namespace kdsl::cuda
