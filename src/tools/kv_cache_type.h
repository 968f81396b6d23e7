// kv_cache_type.h - the KV cache type a tool's --cache-type-k / --cache-type-v names, as llama.cpp spells them
#pragma once
#include <fmt/format.h>
#include <kdsl/dtype.h>
#include <kdsl/error.h>

#include "kernels/library.h"

#include <string>

namespace kdsl::tools {

// "f32", "f16" or "bf16"; llama.cpp's quantized cache types (q8_0, q4_0, ...) are refused,
// naming the flag.
inline DType kv_cache_type(const std::string &flag, const std::string &name) {
  if (name == "f32") return DType::F32;
  if (name == "f16") return DType::F16;
  if (name == "bf16") return DType::BF16;
  throw Error(fmt::format("{} {}: expected f32, f16 or bf16 (a quantized KV cache is not implemented)", flag, name));
}

// The cache's types from --cache-type-k and --cache-type-v ("" where not given). Keys and
// values share one type (kernels/library_impl.h says why), so one flag alone sets both; two
// that differ are refused, naming both.
inline kernels::KvTypes kv_cache_types(const std::string &k_name, const std::string &v_name) {
  const std::string k = k_name.empty() ? (v_name.empty() ? "f32" : v_name) : k_name;
  const std::string v = v_name.empty() ? k : v_name;
  kernels::KvTypes types{kv_cache_type("--cache-type-k", k), kv_cache_type("--cache-type-v", v)};
  if (types.k != types.v)
    throw Error(fmt::format("--cache-type-k {} --cache-type-v {}: keys and values of the KV cache share one type (one flag alone sets both)", k, v));
  return types;
}

}  // namespace kdsl::tools
