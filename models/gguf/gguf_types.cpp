// gguf_types.cpp - names of GGUF value types and ggml tensor types
#include "models/gguf/gguf_types.h"

#include <fmt/format.h>
#include <kdsl/error.h>

namespace kdsl::models {

std::string_view value_type_name(GgufValueType t) {
  static constexpr const char *names[] = {"u8",  "i8",  "u16",    "i16",   "u32", "i32", "f32",
                                          "bool", "string", "array", "u64", "i64", "f64"};
  return uint32_t(t) < 13 ? names[uint32_t(t)] : "unknown";
}

bool is_known_value_type(uint32_t t) { return t <= 12; }

std::string ggml_type_name(uint32_t type) {
  const GgmlTypeTraits *traits = ggml_type_traits(type);
  return traits ? std::string(traits->ggml_name) : fmt::format("type {}", type);
}

}  // namespace kdsl::models
