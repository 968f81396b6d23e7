// gguf_types.h - GGUF metadata value types, and ggml tensor types as the formats table names them
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <kdsl/formats/weight_types.h>

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

// ggml's tensor types are the formats table's rows (include/kdsl/formats/weight_types.def),
// numbered by their ggml ids; only `readable` ones can be loaded, the others are listed so an
// error can name them.
using GgmlType = formats::WeightType;
using GgmlTypeTraits = formats::WeightTypeInfo;

// The row of a type id, or nullptr for an id the table does not list.
inline const GgmlTypeTraits *ggml_type_traits(uint32_t type) { return formats::find_weight_type(type); }
inline const GgmlTypeTraits &ggml_type_traits(GgmlType type) { return formats::weight_type_info(type); }
// "Q4_K" for a listed id, "type 42" for another.
std::string ggml_type_name(uint32_t type);
inline std::string ggml_type_name(GgmlType type) { return ggml_type_name(uint32_t(type)); }
// Parses "Q4_K", "f16" and the like (case-insensitive); nullopt when not a readable type.
inline std::optional<GgmlType> parse_ggml_type(std::string_view name) { return formats::parse_weight_type(name); }

}  // namespace kdsl::models
