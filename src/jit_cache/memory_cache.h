// memory_cache.h - the in-process kernel table, keyed by cache digest, safe for many threads
#pragma once
#include <cassert>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

namespace kdsl::jit_cache {

// Lookups vastly outnumber inserts (every launch looks up, each kernel is inserted once), so
// readers share the lock. Values are shared_ptr so a caller keeps its kernel alive without
// holding the lock.
template <class V>
class MemoryCache {
 public:
  // nullptr when the digest is not present.
  std::shared_ptr<V> find(const std::string &digest) const {
    std::shared_lock lock(mutex_);
    auto it = table_.find(digest);
    return it == table_.end() ? nullptr : it->second;
  }

  // Inserts `value` unless the digest is already present, and returns the value now in the
  // table: when two threads compile the same kernel at once, both end up using the first one
  // inserted and the other copy is dropped.
  std::shared_ptr<V> insert(const std::string &digest, std::shared_ptr<V> value) {
    assert(value && "MemoryCache::insert: a null value would read as a miss");
    std::unique_lock lock(mutex_);
    auto [it, inserted] = table_.try_emplace(digest, std::move(value));
    return it->second;
  }

  size_t size() const {
    std::shared_lock lock(mutex_);
    return table_.size();
  }

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string, std::shared_ptr<V>> table_;
};

}  // namespace kdsl::jit_cache
