// disk_cache.h - the on-disk kernel cache shared by every process of a user: one file per kernel
#pragma once
#include "jit_cache/cache_entry.h"
#include "jit_cache/cache_key.h"

#include <filesystem>
#include <optional>

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
inline constexpr uint32_t kDiskFormatVersion = 1;

class DiskCache {
 public:
  explicit DiskCache(std::filesystem::path dir);

  // $KDSL_CACHE_DIR, else $XDG_CACHE_HOME/kdsl, else $HOME/.cache/kdsl (empty variables and a
  // relative XDG_CACHE_HOME are ignored, as the XDG spec asks).
  static std::filesystem::path default_dir();

  const std::filesystem::path &dir() const { return dir_; }
  std::filesystem::path entry_path(const CacheKey &key) const;

  // nullopt on a miss or on an entry that failed a check (logged, then removed).
  std::optional<CacheEntry> load(const CacheKey &key) const;
  // Best effort: a failure is logged as a warning naming the path and the reason, never thrown.
  void store(const CacheKey &key, const CacheEntry &entry) const;

 private:
  std::filesystem::path dir_;
};

}  // namespace kdsl::jit_cache
