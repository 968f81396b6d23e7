// tool_identity.cpp - tool and library identities for cache keys, remembered per file
#include "runtime/tool_identity.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "jit_cache/cache_key.h"

namespace kdsl::detail {
namespace fs = std::filesystem;

std::string remembered_for_file(const std::string &kind, const std::string &path, const std::function<std::string()> &compute) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  std::string identity = ec ? kind + " " + path : fmt::format("{} {}|{}|{}", kind, path, size, fs::last_write_time(path, ec).time_since_epoch().count());
  static std::mutex mutex;
  static std::map<std::string, std::string> known;
  std::lock_guard lock(mutex);
  auto it = known.find(identity);
  if (it == known.end()) it = known.emplace(identity, compute()).first;
  return it->second;
}

std::string file_hash_hex(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return jit_cache::hash_text_hex(bytes.str()).substr(0, 16);
}

}  // namespace kdsl::detail
