// cache_key.cpp - the kernel cache key: field list, digest, JSON form
#include "jit_cache/cache_key.h"

#include <kdsl/error.h>
#include <xxhash.h>

#include <array>
#include <cstdint>
#include <fmt/format.h>

namespace kdsl::jit_cache {
namespace {

// The one list of key fields, in digest order; the names are the JSON member names.
constexpr std::array<std::pair<const char *, std::string CacheKey::*>, 9> kFields = {{
    {"kernel_name", &CacheKey::kernel_name},
    {"ir_hash", &CacheKey::ir_hash},
    {"specialization", &CacheKey::specialization},
    {"options", &CacheKey::options},
    {"backend", &CacheKey::backend},
    {"arch", &CacheKey::arch},
    {"features", &CacheKey::features},
    {"kdsl_version", &CacheKey::kdsl_version},
    {"llvm_version", &CacheKey::llvm_version},
}};

// Bumped when the digest recipe changes, so old and new digests never coincide.
constexpr std::string_view kDigestDomain = "kdsl-cache-key-v1";

std::string hex128(XXH128_hash_t h) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(32, '0');
  for (size_t i = 0; i < sizeof(c.digest); ++i) {
    out[2 * i] = kHex[c.digest[i] >> 4];
    out[2 * i + 1] = kHex[c.digest[i] & 15];
  }
  return out;
}

void append_length_prefixed(std::string &out, std::string_view s) {
  // Little-endian regardless of host, so the digest is the same on every machine.
  uint64_t n = s.size();
  for (int i = 0; i < 8; ++i) out.push_back(char(uint8_t(n >> (8 * i))));
  out.append(s);
}

}  // namespace

std::string CacheKey::digest() const {
  // Keys are a few hundred bytes: one buffer and one hash call is simpler than streaming.
  std::string buffer;
  append_length_prefixed(buffer, kDigestDomain);
  for (const auto &[name, member] : kFields) append_length_prefixed(buffer, this->*member);
  return hex128(XXH3_128bits(buffer.data(), buffer.size()));
}

nlohmann::json CacheKey::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto &[name, member] : kFields) j[name] = this->*member;
  return j;
}

CacheKey CacheKey::from_json(const nlohmann::json &j) {
  if (!j.is_object())
    throw Error(fmt::format("cache key JSON: expected an object, found {}", j.type_name()));
  CacheKey key;
  for (const auto &[name, member] : kFields) {
    auto it = j.find(name);
    if (it == j.end()) throw Error(fmt::format("cache key JSON: field '{}' is missing", name));
    if (!it->is_string())
      throw Error(fmt::format("cache key JSON: field '{}' should be a string, found {}", name,
                              it->type_name()));
    key.*member = it->get<std::string>();
  }
  return key;
}

std::string hash_text_hex(std::string_view text) {
  return hex128(XXH3_128bits(text.data(), text.size()));
}

}  // namespace kdsl::jit_cache
