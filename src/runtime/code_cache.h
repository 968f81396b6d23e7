// code_cache.h - memory -> disk -> compile: the one chain that finds compiled code, for DSL kernels and cuda_source alike
#pragma once
#include <fmt/format.h>

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "jit_cache/cache_entry.h"
#include "jit_cache/cache_key.h"
#include "jit_cache/disk_cache.h"
#include "jit_cache/memory_cache.h"
#include "runtime/cache_stats.h"
#include "support/log.h"

namespace kdsl::detail {

// A fresh compile's cache entry, and what the log adds to "compiled in N ms".
struct FreshCode {
  jit_cache::CacheEntry entry;
  std::string details;  // " (passes 1.20, lowering 3.40, LLVM 20.00)"
};

// How one kind of code is loaded and compiled.
template <class Code>
struct CodeSource {
  std::string what;       // the log lines' subject: "add<1024> [16,16,_]", "cuda_source scale"
  bool use_disk = true;   // false: compile afresh (KDSL_DUMP writes the stages of what it compiles)
  // Loads an entry's code; throws when it does not load here (the entry is then discarded).
  std::function<std::shared_ptr<Code>(const jit_cache::CacheEntry &)> load;
  // Compiles; `retry` is set after a disk entry failed to load, whose symbols may linger (a JIT).
  std::function<FreshCode(bool retry)> compile;
};

// The code for `key`: from the in-memory table (under memory_key: the digest, scoped to
// where loaded code lives), else from the disk cache, else compiled, stored on disk and
// loaded. The checksum says a disk entry is as it was written, not that its code loads here:
// one that does not is removed and compiled again, never fatal on every run. Counts hits and
// compiles in stats(); `start` is when the caller began (tracing included).
template <class Code>
std::shared_ptr<Code> find_or_compile(jit_cache::MemoryCache<Code> &memory, const jit_cache::CacheKey &key, const std::string &memory_key,
                                      const CodeSource<Code> &source, std::chrono::steady_clock::time_point start) {
  if (auto hit = memory.find(memory_key)) {
    stats().memory_hits.fetch_add(1);
    log_info("{}: memory cache hit ({:.3f} ms)", source.what, elapsed_ms(start));
    return hit;
  }
  jit_cache::DiskCache disk(jit_cache::DiskCache::default_dir());
  bool retry = false;
  jit_cache::EntryFile file;
  if (auto entry = source.use_disk ? disk.load(key, &file) : std::nullopt) {
    try {
      std::shared_ptr<Code> loaded = source.load(*entry);
      stats().disk_hits.fetch_add(1);
      log_info("{}: disk cache hit {} ({:.3f} ms)", source.what, disk.entry_path(key).string(), elapsed_ms(start));
      return memory.insert(memory_key, loaded);
    } catch (const std::exception &e) {
      disk.discard(key, file, fmt::format("its code does not load ({})", e.what()));
      retry = true;
    }
  }
  FreshCode fresh = source.compile(retry);
  disk.store(key, fresh.entry);
  std::shared_ptr<Code> loaded = source.load(fresh.entry);
  double ms = elapsed_ms(start);
  stats().compiled.fetch_add(1);
  stats().compile_us.fetch_add(int64_t(ms * 1000));
  log_info("{}: compiled in {:.2f} ms{}", source.what, ms, fresh.details);
  return memory.insert(memory_key, loaded);
}

}  // namespace kdsl::detail
