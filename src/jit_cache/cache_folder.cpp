// cache_folder.cpp - listing, measuring and pruning the disk cache's entry files
#include "jit_cache/cache_folder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <system_error>

#include <kdsl/error.h>

#include "support/log.h"

namespace fs = std::filesystem;

namespace kdsl::jit_cache {
namespace {

bool is_hex(const std::string &s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

}  // namespace

std::vector<EntryFileInfo> list_entry_files(const fs::path &dir) {
  std::error_code ec;
  fs::file_status top = fs::symlink_status(dir, ec);
  if (ec || !fs::exists(top)) throw Error(fmt::format("{}: no kernel cache there", dir.string()));
  if (fs::is_symlink(top)) throw Error(fmt::format("{}: is a symbolic link; kdsl follows none in its cache", dir.string()));
  if (!fs::is_directory(top)) throw Error(fmt::format("{}: not a folder", dir.string()));
  std::vector<EntryFileInfo> found;
  for (const fs::directory_entry &shard : fs::directory_iterator(dir, ec)) {
    std::string name = shard.path().filename().string();
    if (name.size() != 2 || !is_hex(name) || shard.is_symlink() || !shard.is_directory()) continue;
    std::error_code shard_ec;
    for (const fs::directory_entry &file : fs::directory_iterator(shard.path(), shard_ec)) {
      if (file.path().extension() != ".kdslbin") continue;  // temporary files are the cache's to sweep
      struct stat st;
      if (::lstat(file.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      EntryFileInfo info;
      info.path = file.path();
      info.bytes = uint64_t(st.st_size);
      info.last_used = std::chrono::system_clock::time_point(std::chrono::seconds(st.st_atim.tv_sec));
      found.push_back(std::move(info));
    }
  }
  std::sort(found.begin(), found.end(), [](const EntryFileInfo &a, const EntryFileInfo &b) { return a.path < b.path; });
  return found;
}

bool remove_entry_file(const fs::path &file) {
  struct stat st;
  if (::lstat(file.c_str(), &st) != 0 || st.st_uid != ::geteuid()) return false;
  return ::unlink(file.c_str()) == 0;
}

PruneResult prune_entries(std::vector<EntryFileInfo> entries, uint64_t max_bytes, const fs::path &keep) {
  std::sort(entries.begin(), entries.end(), [](const EntryFileInfo &a, const EntryFileInfo &b) {
    if (a.bad != b.bad) return a.bad;
    return a.last_used < b.last_used;
  });
  PruneResult r;
  for (const EntryFileInfo &e : entries) r.bytes_before += e.bytes;
  r.bytes_after = r.bytes_before;
  for (const EntryFileInfo &e : entries) {
    if (r.bytes_after <= max_bytes) break;
    if (!keep.empty() && e.path == keep) continue;
    // Another process pruning at the same time may have removed it first: then it is gone too.
    if (remove_entry_file(e.path) || !fs::exists(fs::symlink_status(e.path))) r.bytes_after -= e.bytes, ++r.removed;
  }
  return r;
}

uint64_t parse_size(const std::string &text, const std::string &what) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  std::string unit = text.substr(used);
  if (unit.size() == 2 && (unit[1] == 'B' || unit[1] == 'b')) unit.pop_back();  // "2GB", "500MiB" read as 2G, 500M
  if (unit.size() == 3 && unit.substr(1) == "iB") unit.resize(1);
  for (char &c : unit) c = char(std::toupper(static_cast<unsigned char>(c)));
  const std::map<std::string, double> units = {{"", 1}, {"K", 1024.0}, {"M", 1024.0 * 1024}, {"G", 1024.0 * 1024 * 1024}, {"T", 1024.0 * 1024 * 1024 * 1024}};
  auto unit_it = units.find(unit);
  if (used == 0 || unit_it == units.end() || !(value >= 0) || value * unit_it->second > 1e18)
    throw Error(fmt::format("{} '{}': expected a size such as 500M or 2G", what, text));
  return uint64_t(value * unit_it->second);
}

std::string size_text(uint64_t bytes) {
  if (bytes >= (uint64_t(1) << 30)) return fmt::format("{:.2f} GiB", double(bytes) / double(uint64_t(1) << 30));
  if (bytes >= (uint64_t(1) << 20)) return fmt::format("{:.1f} MiB", double(bytes) / double(1 << 20));
  return fmt::format("{:.1f} KiB", double(bytes) / 1024.0);
}

uint64_t cache_size_limit() {
  static const uint64_t limit = [] {
    const char *text = std::getenv("KDSL_CACHE_MAX_SIZE");
    if (!text || !*text) return uint64_t(0);
    try {
      return parse_size(text, "KDSL_CACHE_MAX_SIZE");
    } catch (const Error &e) {
      log_warn("kernel cache: {}; the cache is not capped", e.what());
      return uint64_t(0);
    }
  }();
  return limit;
}

}  // namespace kdsl::jit_cache
