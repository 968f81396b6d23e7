// disk_cache.h - the on-disk kernel cache shared by every process of a user: one file per kernel
#pragma once
#include "jit_cache/cache_entry.h"
#include "jit_cache/cache_key.h"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace kdsl::jit_cache {

// Entries live at dir/<first 2 digest chars>/<digest>.kdslbin, so no directory grows past a few
// thousand files. File format, integers little-endian:
//
//   "KDSLBIN\0"        8 bytes magic
//   u32 version        kDiskFormatVersion
//   u64 n, n bytes     the key as JSON (compared with the requested key on load)
//   u64 n, n bytes     the entry metadata as JSON
//   u64 n, n bytes     the symbol
//   u64 n, n bytes     the code
//   u64 checksum       XXH3-64 of every byte before it
//
// Several processes may share a directory: store() publishes with an atomic rename, so a
// reader sees either no file or a complete one. Nothing read from disk is trusted: a file that
// fails any check is reported, removed, and treated as a miss, and the caller recompiles.
// Neither load() nor store() throws for a bad or unwritable cache; the kernel still runs.
//
// The checksum is integrity, not authenticity, so the cache also trusts only what this user
// could have written: the directory, each shard directory and each entry must belong to the
// effective user and be writable by nobody else, and no symbolic link is followed inside the
// cache (the directory itself included). A directory that fails this is not used (one warning
// per directory and process; kernels are then compiled in memory only). What kdsl creates is
// private: directories 0700, entries 0600. Opening a directory also sweeps away temporary files
// left by writers that died before their rename (older than a minute, from a process that is
// gone). Problems with the whole directory (refused, unwritable) are reported once per process,
// not once per kernel.
inline constexpr uint32_t kDiskFormatVersion = 1;

// No entry kdsl writes is larger (kernels' entries are tens of KiB); a bigger file is refused
// from its size alone, unread.
inline constexpr uint64_t kMaxEntryBytes = uint64_t(64) << 20;

// Which file a load() read, so that a caller that cannot use the entry removes that file and no
// other (another process may have published a good one under the name since).
struct EntryFile {
  uint64_t device = 0;
  uint64_t inode = 0;
};

// One entry file read and checked as load() checks it, but against no particular key: what
// kdsl-cache lists and verifies. `problem` is empty for a good entry, else what is wrong.
struct EntryReport {
  std::optional<CacheKey> key;
  nlohmann::json metadata;
  uint64_t bytes = 0, code_bytes = 0;
  std::chrono::system_clock::time_point last_used;  // last load (the file's access time, set by load)
  std::string problem;
};
EntryReport inspect_entry(const std::filesystem::path &file);

class DiskCache {
 public:
  explicit DiskCache(std::filesystem::path dir);

  // $KDSL_CACHE_DIR, else $XDG_CACHE_HOME/kdsl, else $HOME/.cache/kdsl (empty variables and a
  // relative XDG_CACHE_HOME are ignored, as the XDG spec asks). With none of them (a bare
  // container), <temp>/kdsl-cache-<uid>, created 0700; when that name is already taken by a
  // directory this user may not trust (another user's, writable by others, a link), a private
  // directory beside it, <temp>/kdsl-cache-<uid>-XXXXXX, an earlier run's when there is one.
  static std::filesystem::path default_dir();

  const std::filesystem::path &dir() const { return dir_; }
  std::filesystem::path entry_path(const CacheKey &key) const;

  // nullopt on a miss or on an entry that failed a check (logged, then removed when it is a
  // regular file of this user's). `file`, when given, is set to the file an entry came from.
  std::optional<CacheEntry> load(const CacheKey &key, EntryFile *file = nullptr) const;
  // Best effort: a failure is logged as a warning naming the path and the reason, never thrown.
  void store(const CacheKey &key, const CacheEntry &entry) const;
  // For an entry load() returned that the caller cannot use (its code does not link or load):
  // logs one warning naming the file and `reason`, and removes the file if it is still `file`.
  void discard(const CacheKey &key, const EntryFile &file, const std::string &reason) const;

 private:
  std::filesystem::path dir_;
};

}  // namespace kdsl::jit_cache
