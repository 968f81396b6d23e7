// kv_cache_type.h - the KV cache type a tool's --cache-type-k / --cache-type-v names, as llama.cpp spells them
#pragma once
#include <fmt/format.h>
#include <kdsl/error.h>

#include "kernels/library.h"

#include <string>

namespace kdsl::tools {

// One of kernels::kKvCacheTypes by name ("f32", "f16", "bf16", "q8_0"); llama.cpp's other
// quantized cache types (q4_0, q5_1, ...) are refused, naming the flag.
inline kernels::WeightType kv_cache_type(const std::string &flag, const std::string &name) {
  for (kernels::WeightType t : kernels::kKvCacheTypes)
    if (kernels::weight_type_info(t).name == name) return t;
  throw Error(fmt::format("{} {}: expected f32, f16, bf16 or q8_0 (other quantized KV caches are not implemented)", flag, name));
}

// The cache's types from --cache-type-k and --cache-type-v ("" where not given), and
// `default_name` where neither is. Keys and values share one type (kernels/library_impl.h says
// why), so one flag alone sets both; two that differ are refused, naming both.
inline kernels::KvTypes kv_cache_types(const std::string &k_name, const std::string &v_name, const std::string &default_name = "f32") {
  const std::string k = k_name.empty() ? (v_name.empty() ? default_name : v_name) : k_name;
  const std::string v = v_name.empty() ? k : v_name;
  kernels::KvTypes types{kv_cache_type("--cache-type-k", k), kv_cache_type("--cache-type-v", v)};
  if (types.k != types.v)
    throw Error(fmt::format("--cache-type-k {} --cache-type-v {}: keys and values of the KV cache share one type (one flag alone sets both)", k, v));
  return types;
}

}  // namespace kdsl::tools
