// cache_key_test.cpp - cache key digests: stable, sensitive to every field, no field aliasing
#include "jit_cache/cache_key.h"

#include <doctest/doctest.h>
#include <kdsl/error.h>

#include <set>
#include <utility>
#include <vector>

using kdsl::jit_cache::CacheKey;
using kdsl::jit_cache::hash_text_hex;

namespace {

CacheKey sample_key() {
  return CacheKey{"matmul", hash_text_hex("func @matmul() {}"), "a:div16,b:div16,M=128", "num_warps=4",
                  "cuda", "sm_90", "ptx83", "0.1.0", "19.1.7"};
}

const std::vector<std::pair<const char *, std::string CacheKey::*>> kFields = {
    {"kernel_name", &CacheKey::kernel_name}, {"ir_hash", &CacheKey::ir_hash},
    {"specialization", &CacheKey::specialization}, {"options", &CacheKey::options},
    {"backend", &CacheKey::backend}, {"arch", &CacheKey::arch},
    {"features", &CacheKey::features}, {"kdsl_version", &CacheKey::kdsl_version},
    {"llvm_version", &CacheKey::llvm_version}};

bool is_lower_hex(const std::string &s) {
  return s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

TEST_CASE("jit_cache: hash_text_hex is XXH3-128 in canonical hex") {
  // Reference value for the empty input, from the xxHash test vectors.
  CHECK(hash_text_hex("") == "99aa06d3014798d86001c324468d497f");
  const std::string h = hash_text_hex("func @add(%a: f32) {}");
  CHECK(h.size() == 32);
  CHECK(is_lower_hex(h));
  CHECK(h == hash_text_hex("func @add(%a: f32) {}"));
  CHECK(h != hash_text_hex("func @add(%a: f16) {}"));
}

TEST_CASE("jit_cache: a key digest is 32 lowercase hex chars and stable") {
  const CacheKey key = sample_key();
  const std::string d = key.digest();
  CHECK(d.size() == 32);
  CHECK(is_lower_hex(d));
  CHECK(d == CacheKey(key).digest());
  CHECK(d == sample_key().digest());
  // Pinned: a change here silently invalidates every cache on disk, so it must be deliberate
  // (bump kDigestDomain in cache_key.cpp and update this value).
  CHECK(CacheKey{"k", "", "", "", "cpu", "", "", "0.1.0", "19"}.digest() ==
        "fcdef58cc09b61de4bf5ac1eec9a2b04");
}

TEST_CASE("jit_cache: changing any key field changes the digest") {
  const CacheKey base = sample_key();
  std::set<std::string> digests{base.digest()};
  for (const auto &field : kFields) {
    const auto member = field.second;
    CAPTURE(field.first);
    CacheKey changed = base;
    changed.*member += "x";
    CHECK(changed.digest() != base.digest());
    CHECK(changed != base);
    digests.insert(changed.digest());
    // Emptying a field is a change too.
    CacheKey emptied = base;
    emptied.*member = "";
    CHECK(emptied.digest() != base.digest());
  }
  CHECK(digests.size() == kFields.size() + 1);
}

TEST_CASE("jit_cache: field boundaries cannot alias in the digest") {
  // Every split of the same concatenated text over two neighbouring fields must differ.
  std::set<std::string> digests;
  const std::string text = "abcdef";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    CacheKey key;
    key.kernel_name = text.substr(0, cut);
    key.ir_hash = text.substr(cut);
    digests.insert(key.digest());
  }
  CHECK(digests.size() == text.size() + 1);
  // The same value moved to a different field must differ too.
  CacheKey a, b;
  a.arch = "sm_90";
  b.features = "sm_90";
  CHECK(a.digest() != b.digest());
}

TEST_CASE("jit_cache: a key round-trips through JSON") {
  const CacheKey key = sample_key();
  const nlohmann::json j = key.to_json();
  REQUIRE(j.is_object());
  CHECK(j.size() == kFields.size());
  for (const auto &[name, member] : kFields) CHECK(j.at(name) == key.*member);
  CHECK(CacheKey::from_json(j) == key);
  CHECK(CacheKey::from_json(nlohmann::json::parse(j.dump())) == key);
}

TEST_CASE("jit_cache: from_json names the missing or mistyped field") {
  nlohmann::json j = sample_key().to_json();
  j.erase("arch");
  CHECK_THROWS_WITH_AS(CacheKey::from_json(j), "cache key JSON: field 'arch' is missing", kdsl::Error);
  j = sample_key().to_json();
  j["options"] = 4;
  CHECK_THROWS_WITH_AS(CacheKey::from_json(j),
                       "cache key JSON: field 'options' should be a string, found number", kdsl::Error);
  CHECK_THROWS_WITH_AS(CacheKey::from_json(nlohmann::json::array()),
                       "cache key JSON: expected an object, found array", kdsl::Error);
}
