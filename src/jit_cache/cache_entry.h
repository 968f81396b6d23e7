// cache_entry.h - what the kernel cache stores for one key: entry symbol, code, metadata
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kdsl::jit_cache {

struct CacheEntry {
  std::string symbol;         // the kernel's entry point inside `code`
  std::vector<uint8_t> code;  // a host object file or a device binary (cubin, hsaco)
  nlohmann::json metadata;    // shared memory, register counts, argument layout, ...

  bool operator==(const CacheEntry &) const = default;
};

}  // namespace kdsl::jit_cache
