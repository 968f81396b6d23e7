// kdsl_cache.cpp - kdsl-cache: list, measure, verify, prune and clear the on-disk kernel cache and its autotuning records
#include <CLI/CLI.hpp>
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <filesystem>
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <kdsl/error.h>

#include "jit_cache/cache_folder.h"
#include "jit_cache/disk_cache.h"
#include "jit_cache/tuning_record.h"
#include "src/tools/tool_main.h"

using namespace kdsl;
using jit_cache::size_text;
namespace fs = std::filesystem;

namespace {

struct Found {
  fs::path path;
  jit_cache::EntryReport report;
};

// Every entry file, each read and checked as a load would check it.
std::vector<Found> scan(const fs::path &dir) {
  std::vector<Found> found;
  for (const jit_cache::EntryFileInfo &file : jit_cache::list_entry_files(dir)) found.push_back({file.path, jit_cache::inspect_entry(file.path)});
  return found;
}

bool remove_entry(const Found &f) { return jit_cache::remove_entry_file(f.path); }

// Autotuning's records (<cache>/tuning): each read and checked as a launch reads it.
struct FoundRecord {
  jit_cache::TuningFileInfo file;
  std::optional<jit_cache::TuningRecord> record;
  std::string problem;
};

std::vector<FoundRecord> scan_tuning(const fs::path &dir) {
  std::vector<FoundRecord> found;
  for (const jit_cache::TuningFileInfo &file : jit_cache::list_tuning_files(dir)) {
    FoundRecord f{file, std::nullopt, {}};
    f.record = jit_cache::read_tuning_record(file.path, f.problem);
    if (!f.record && f.problem.empty()) f.problem = "unreadable";
    found.push_back(std::move(f));
  }
  return found;
}

// A record's pick and what it gained: "8x256 (1.12x the default 8x128)".
std::string pick_text(const jit_cache::TuningRecord &r) {
  size_t w = size_t(std::find(r.candidates.begin(), r.candidates.end(), r.winner) - r.candidates.begin());
  if (w == 0 || r.microseconds.size() != r.candidates.size() || !(r.microseconds[w] > 0)) return r.winner + " (the default)";
  return fmt::format("{} ({:.2f}x the default {})", r.winner, r.microseconds[0] / r.microseconds[w], r.candidates[0]);
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
  std::vector<FoundRecord> tuning = scan_tuning(dir);
  if (tuning.empty()) return 0;
  fmt::print("\n{:<40} {:<24} {:<36} {:<10}  {}\n", "tuned kernel", "key", "pick", "timed", "device / status");
  for (const FoundRecord &f : tuning) {
    if (!f.record) {
      fmt::print("{:<40} {:<24} {:<36} {:%Y-%m-%d}  {}\n", f.file.path.filename().string(), "?", "?", f.file.modified, f.problem);
      continue;
    }
    const jit_cache::TuningRecord &r = *f.record;
    fmt::print("{:<40} {:<24} {:<36} {:<10}  {}\n", r.kernel, r.key, pick_text(r), r.date.substr(0, 10), r.device);
  }
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
  std::vector<FoundRecord> tuning = scan_tuning(dir);
  uint64_t tuning_bytes = 0;
  int tuning_bad = 0;
  for (const FoundRecord &f : tuning) tuning_bytes += f.file.bytes, tuning_bad += !f.record;
  fmt::print("  {:<24} {:>6} records {:>12} ({} bad)\n", "autotuning", tuning.size(), size_text(tuning_bytes), tuning_bad);
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
  std::vector<FoundRecord> tuning = scan_tuning(dir);
  for (const FoundRecord &f : tuning) {
    if (f.record) continue;
    ++bad;
    bool gone = remove && jit_cache::remove_entry_file(f.file.path);
    removed += gone;
    fmt::print("{}: {}{}\n", f.file.path.string(), f.problem, gone ? " (removed)" : "");
  }
  fmt::print("{} entries and {} tuning records checked, {} bad{}\n", found.size(), tuning.size(), bad,
             remove ? fmt::format(", {} removed", removed) : "");
  return bad > removed ? 1 : 0;
}

// Least recently used first, bad entries before all of them, until the cache fits.
int prune(const fs::path &dir, uint64_t max_bytes) {
  std::vector<jit_cache::EntryFileInfo> entries;
  for (const Found &f : scan(dir)) entries.push_back({f.path, f.report.bytes, f.report.last_used, !f.report.problem.empty()});
  jit_cache::PruneResult r = jit_cache::prune_entries(std::move(entries), max_bytes);
  fmt::print("removed {} entries: {} -> {} (limit {})\n", r.removed, size_text(r.bytes_before), size_text(r.bytes_after), size_text(max_bytes));
  return 0;
}

int clear(const fs::path &dir, bool keep_tuning) {
  std::vector<Found> found = scan(dir);
  int removed = 0;
  for (const Found &f : found) removed += remove_entry(f);
  fmt::print("removed {} of {} entries from {}\n", removed, found.size(), dir.string());
  if (!keep_tuning) {
    std::vector<FoundRecord> tuning = scan_tuning(dir);
    int records = 0;
    for (const FoundRecord &f : tuning) records += jit_cache::remove_entry_file(f.file.path);
    fmt::print("removed {} of {} tuning records (later launches time their kernels again)\n", records, tuning.size());
  }
  return 0;
}

int clear_tuning(const fs::path &dir) {
  std::vector<FoundRecord> tuning = scan_tuning(dir);
  int removed = 0;
  for (const FoundRecord &f : tuning) removed += jit_cache::remove_entry_file(f.file.path);
  fmt::print("removed {} of {} tuning records from {}\n", removed, tuning.size(), dir.string());
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kdsl-cache: the on-disk kernel cache: list, stats, verify, prune, clear"};
  std::string dir_option, max_size;
  bool remove_bad = false, keep_tuning = false;
  app.add_option("--cache-dir", dir_option, "the cache folder (default $KDSL_CACHE_DIR, then $XDG_CACHE_HOME/kdsl, then ~/.cache/kdsl)");
  app.require_subcommand(1);
  auto *list_cmd = app.add_subcommand("list", "one line per entry: kernel, target, size, last use, status");
  auto *stats_cmd = app.add_subcommand("stats", "entries and bytes, by target");
  auto *verify_cmd = app.add_subcommand("verify", "re-check every entry's header, checksum and key; status 1 if any is bad");
  verify_cmd->add_flag("--remove", remove_bad, "remove the bad entries (this user's own)");
  auto *prune_cmd = app.add_subcommand("prune", "remove least recently used entries until the cache fits");
  prune_cmd->add_option("--max-size", max_size, "the size to fit in: 500M, 2G, ...")->required();
  auto *clear_cmd = app.add_subcommand("clear", "remove every entry and tuning record");
  clear_cmd->add_flag("--keep-tuning", keep_tuning, "remove the kernels only, keeping autotuning's records");
  auto *clear_tuning_cmd = app.add_subcommand("clear-tuning", "remove autotuning's records only (later launches time their kernels again)");
  for (CLI::App *sub : {list_cmd, stats_cmd, verify_cmd, prune_cmd, clear_cmd, clear_tuning_cmd})
    sub->add_option("--cache-dir", dir_option, "the cache folder");
  if (int status = tools::parse_command_line(app, "kdsl-cache", argc, argv); status >= 0) return status;
  fs::path dir = dir_option.empty() ? jit_cache::DiskCache::default_dir() : fs::path(dir_option);
  return tools::run_tool("kdsl-cache", dir.string(), [&] {
    if (*list_cmd) return list(dir);
    if (*stats_cmd) return stats(dir);
    if (*verify_cmd) return verify(dir, remove_bad);
    if (*prune_cmd) return prune(dir, jit_cache::parse_size(max_size, "--max-size"));
    if (*clear_tuning_cmd) return clear_tuning(dir);
    return clear(dir, keep_tuning);
  });
}
