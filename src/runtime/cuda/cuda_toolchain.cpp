// cuda_toolchain.cpp - ptxas --version and libdevice's hash, for CUDA cache keys
#include "runtime/cuda/cuda_toolchain.h"

#include <fmt/format.h>

#include <cstdio>
#include <regex>

#include "codegen/nvptx/ptxas.h"
#include "runtime/tool_identity.h"

namespace kdsl::cuda {

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
  std::string ptxas_part = ptxas.empty() ? "none" : detail::remembered_for_file("ptxas", ptxas, [&] { return ptxas_version(ptxas); });
  std::string libdevice_part = libdevice.empty() ? "none" : detail::remembered_for_file("libdevice", libdevice, [&] { return detail::file_hash_hex(libdevice); });
  return fmt::format("ptxas {}; libdevice {}", ptxas_part, libdevice_part);
}

}  // namespace kdsl::cuda
