// kdsl_cache.cpp - kdsl-cache: list, measure, verify, prune and clear the on-disk kernel cache
#include <CLI/CLI.hpp>
#include <sys/stat.h>
#include <unistd.h>
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>
#include <vector>

#include <kdsl/error.h>

#include "jit_cache/disk_cache.h"
#include "src/tools/tool_main.h"

using namespace kdsl;
namespace fs = std::filesystem;

namespace {

struct Found {
  fs::path path;
  jit_cache::EntryReport report;
};

bool is_hex(const std::string &s) { return std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(uint8_t(c)); }); }

// Every file in the cache's two-hex-digit shard folders, checked. Links are neither followed
// nor counted as folders: the cache itself follows none.
std::vector<Found> scan(const fs::path &dir) {
  std::error_code ec;
  fs::file_status top = fs::symlink_status(dir, ec);
  if (ec || !fs::exists(top)) throw Error(fmt::format("{}: no kernel cache there", dir.string()));
  if (fs::is_symlink(top)) throw Error(fmt::format("{}: is a symbolic link; kdsl follows none in its cache", dir.string()));
  if (!fs::is_directory(top)) throw Error(fmt::format("{}: not a folder", dir.string()));
  std::vector<Found> found;
  for (const fs::directory_entry &shard : fs::directory_iterator(dir)) {
    std::string name = shard.path().filename().string();
    if (name.size() != 2 || !is_hex(name) || !shard.is_directory() || shard.is_symlink()) continue;
    for (const fs::directory_entry &file : fs::directory_iterator(shard.path())) {
      if (file.path().extension() != ".kdslbin") continue;  // temporary files are the cache's to sweep
      found.push_back({file.path(), jit_cache::inspect_entry(file.path())});
    }
  }
  std::sort(found.begin(), found.end(), [](const Found &a, const Found &b) { return a.path < b.path; });
  return found;
}

std::string size_text(uint64_t bytes) {
  if (bytes >= (uint64_t(1) << 30)) return fmt::format("{:.2f} GiB", double(bytes) / double(uint64_t(1) << 30));
  if (bytes >= (uint64_t(1) << 20)) return fmt::format("{:.1f} MiB", double(bytes) / double(1 << 20));
  return fmt::format("{:.1f} KiB", double(bytes) / 1024.0);
}

// "2G", "500M", "64K", "1000": a size in bytes (powers of 1024).
uint64_t parse_size(const std::string &text) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  std::string unit = text.substr(used);
  std::map<std::string, double> units = {{"", 1}, {"K", 1024.0}, {"M", 1024.0 * 1024}, {"G", 1024.0 * 1024 * 1024}};
  if (used == 0 || !units.count(unit) || !(value >= 0) || value * units[unit] > 1e18)
    throw Error(fmt::format("--max-size '{}': expected a size such as 500M or 2G", text));
  return uint64_t(value * units[unit]);
}

// Removes an entry file, but only one this user owns: another user's file in a shared folder
// is reported, not touched.
bool remove_entry(const Found &f) {
  struct stat st;
  if (::lstat(f.path.c_str(), &st) != 0 || st.st_uid != ::geteuid()) return false;
  return ::unlink(f.path.c_str()) == 0;
}

std::string where(const Found &f) {
  return f.report.key ? fmt::format("{} {}", f.report.key->backend, f.report.key->arch) : std::string("?");
}

int list(const fs::path &dir) {
  std::vector<Found> found = scan(dir);
  fmt::print("{:<56} {:<18} {:>10}  {:<10}  {}\n", "kernel", "target", "size", "last used", "status");
  for (const Found &f : found)
    fmt::print("{:<56} {:<18} {:>10}  {:%Y-%m-%d}  {}\n", f.report.key ? f.report.key->kernel_name : f.path.filename().string(), where(f),
               size_text(f.report.bytes), f.report.last_used, f.report.problem.empty() ? "ok" : f.report.problem);
  return 0;
}

int stats(const fs::path &dir) {
  std::vector<Found> found = scan(dir);
  std::map<std::string, std::pair<int, uint64_t>> by_target;
  uint64_t total = 0;
  int bad = 0;
  for (const Found &f : found) {
    total += f.report.bytes;
    bad += !f.report.problem.empty();
    auto &t = by_target[where(f)];
    ++t.first, t.second += f.report.bytes;
  }
  fmt::print("{}: {} entries, {} ({} bad)\n", dir.string(), found.size(), size_text(total), bad);
  for (const auto &[target, t] : by_target) fmt::print("  {:<24} {:>6} entries {:>12}\n", target, t.first, size_text(t.second));
  return 0;
}

// Exit status 1 when bad entries remain, so scripts can check a cache.
int verify(const fs::path &dir, bool remove) {
  std::vector<Found> found = scan(dir);
  int bad = 0, removed = 0;
  for (const Found &f : found) {
    if (f.report.problem.empty()) continue;
    ++bad;
    bool gone = remove && remove_entry(f);
    removed += gone;
    fmt::print("{}: {}{}\n", f.path.string(), f.report.problem, gone ? " (removed)" : "");
  }
  fmt::print("{} entries checked, {} bad{}\n", found.size(), bad, remove ? fmt::format(", {} removed", removed) : "");
  return bad > removed ? 1 : 0;
}

// Least recently used first, bad entries before all of them, until the cache fits.
int prune(const fs::path &dir, uint64_t max_bytes) {
  std::vector<Found> found = scan(dir);
  std::sort(found.begin(), found.end(), [](const Found &a, const Found &b) {
    if (a.report.problem.empty() != b.report.problem.empty()) return !a.report.problem.empty();
    return a.report.last_used < b.report.last_used;
  });
  uint64_t total = 0;
  for (const Found &f : found) total += f.report.bytes;
  uint64_t before = total;
  int removed = 0;
  for (const Found &f : found) {
    if (total <= max_bytes) break;
    if (remove_entry(f)) total -= f.report.bytes, ++removed;
  }
  fmt::print("removed {} entries: {} -> {} (limit {})\n", removed, size_text(before), size_text(total), size_text(max_bytes));
  return 0;
}

int clear(const fs::path &dir) {
  std::vector<Found> found = scan(dir);
  int removed = 0;
  for (const Found &f : found) removed += remove_entry(f);
  fmt::print("removed {} of {} entries from {}\n", removed, found.size(), dir.string());
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kdsl-cache: the on-disk kernel cache: list, stats, verify, prune, clear"};
  std::string dir_option, max_size;
  bool remove_bad = false;
  app.add_option("--cache-dir", dir_option, "the cache folder (default $KDSL_CACHE_DIR, then $XDG_CACHE_HOME/kdsl, then ~/.cache/kdsl)");
  app.require_subcommand(1);
  auto *list_cmd = app.add_subcommand("list", "one line per entry: kernel, target, size, last use, status");
  auto *stats_cmd = app.add_subcommand("stats", "entries and bytes, by target");
  auto *verify_cmd = app.add_subcommand("verify", "re-check every entry's header, checksum and key; status 1 if any is bad");
  verify_cmd->add_flag("--remove", remove_bad, "remove the bad entries (this user's own)");
  auto *prune_cmd = app.add_subcommand("prune", "remove least recently used entries until the cache fits");
  prune_cmd->add_option("--max-size", max_size, "the size to fit in: 500M, 2G, ...")->required();
  auto *clear_cmd = app.add_subcommand("clear", "remove every entry");
  for (CLI::App *sub : {list_cmd, stats_cmd, verify_cmd, prune_cmd, clear_cmd})
    sub->add_option("--cache-dir", dir_option, "the cache folder");
  if (int status = tools::parse_command_line(app, "kdsl-cache", argc, argv); status >= 0) return status;
  fs::path dir = dir_option.empty() ? jit_cache::DiskCache::default_dir() : fs::path(dir_option);
  return tools::run_tool("kdsl-cache", dir.string(), [&] {
    if (*list_cmd) return list(dir);
    if (*stats_cmd) return stats(dir);
    if (*verify_cmd) return verify(dir, remove_bad);
    if (*prune_cmd) return prune(dir, parse_size(max_size));
    return clear(dir);
  });
}
