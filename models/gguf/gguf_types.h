// gguf_types.h - GGUF metadata value types and ggml tensor types, with each tensor type's block geometry
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kdsl::models {

enum class GgufValueType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

std::string_view value_type_name(GgufValueType t);
bool is_known_value_type(uint32_t t);

// ggml's tensor type ids. Only those with `supported` traits can be read; the others are
// listed so an error can name them.
enum class GgmlType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  BF16 = 30,
};

struct GgmlTypeTraits {
  const char *name;
  int64_t block_elements;  // elements per block (1 for plain floats)
  int64_t block_bytes;     // bytes per block
  bool supported;          // readable and dequantizable by kdsl
};

// Traits of a type id, or nullopt for an id ggml does not define (or kdsl does not know).
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type);
const GgmlTypeTraits &ggml_type_traits(GgmlType type);
std::string ggml_type_name(uint32_t type);
inline std::string ggml_type_name(GgmlType type) { return ggml_type_name(uint32_t(type)); }
// Parses "Q4_K", "f16" and the like (case-insensitive); nullopt when not a supported type.
std::optional<GgmlType> parse_ggml_type(std::string_view name);

}  // namespace kdsl::models
