// kv_cache_type.h - the KV cache type a tool's --cache-type-k / --cache-type-v names, as llama.cpp spells them
#pragma once
#include <fmt/format.h>
#include <kdsl/dtype.h>
#include <kdsl/error.h>

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

}  // namespace kdsl::tools
