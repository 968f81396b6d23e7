// cache_key.h - what identifies a compiled kernel, and the 128-bit digest that names it on disk
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace kdsl::jit_cache {

// Everything that can change the generated code. Two launches share a compiled kernel only
// when every field matches; a field added here must also go into digest() and the JSON form
// (cache_key.cpp lists them once).
struct CacheKey {
  std::string kernel_name;
  std::string ir_hash;         // hash_text_hex of the canonical IR text
  std::string specialization;  // argument specialization classes (divisibility, constants)
  std::string options;         // launch options: num_warps, num_stages, ...
  std::string backend;         // "cpu", "cuda", "hip"
  std::string arch;            // "sm_90", "gfx942", host CPU name
  std::string features;        // host CPU features or PTX version
  std::string kdsl_version;
  std::string llvm_version;

  // 32 lowercase hex chars: XXH3-128 over every field, each prefixed with its length so that
  // moving bytes from one field into the next cannot produce the same digest.
  std::string digest() const;

  // An object with one string member per field.
  nlohmann::json to_json() const;
  // Throws kdsl::Error naming the field when one is missing or not a string.
  static CacheKey from_json(const nlohmann::json &j);

  bool operator==(const CacheKey &) const = default;
};

// XXH3-128 of `text` as 32 lowercase hex chars (big-endian canonical form); used for IR hashes.
std::string hash_text_hex(std::string_view text);

}  // namespace kdsl::jit_cache
