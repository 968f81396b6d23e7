// cache_folder.h - the disk cache as a whole: its entry files, their sizes and last use, pruning to a size
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace kdsl::jit_cache {

// One entry file, as far as stat() tells: no byte of it read.
struct EntryFileInfo {
  std::filesystem::path path;
  uint64_t bytes = 0;
  std::chrono::system_clock::time_point last_used;  // the access time: a load stamps it
  bool bad = false;                                  // known to fail its checks (kdsl-cache verify)
};

// Every *.kdslbin file in the folder's two-hex-digit shard folders, sorted by path. Links are
// neither followed nor listed. Throws kdsl::Error when `dir` is missing, a link or not a folder.
std::vector<EntryFileInfo> list_entry_files(const std::filesystem::path &dir);

// Removes an entry file, but only one this user owns: another user's file in a shared folder
// is left alone. False when it was not removed.
bool remove_entry_file(const std::filesystem::path &file);

struct PruneResult {
  int removed = 0;
  uint64_t bytes_before = 0, bytes_after = 0;
};

// Removes bad entries first, then the least recently used, until the entries take at most
// `max_bytes`; `keep` (an entry just written) is never removed.
PruneResult prune_entries(std::vector<EntryFileInfo> entries, uint64_t max_bytes, const std::filesystem::path &keep = {});

// "2G", "500M", "64K", "1000": bytes (powers of 1024). Throws kdsl::Error naming `what` (the
// option or variable it came from) for anything else.
uint64_t parse_size(const std::string &text, const std::string &what);
std::string size_text(uint64_t bytes);

// KDSL_CACHE_MAX_SIZE, read once: 0 when unset (no cap). A value that does not parse is
// reported once and ignored.
uint64_t cache_size_limit();

}  // namespace kdsl::jit_cache
