// gguf_types.cpp - names and block geometry of GGUF value types and ggml tensor types
#include "models/gguf/gguf_types.h"

#include <cctype>
#include <fmt/format.h>
#include <kdsl/error.h>

#include "models/gguf/quant_blocks.h"

namespace kdsl::models {

namespace {

struct Entry {
  GgmlType type;
  GgmlTypeTraits traits;
};

constexpr Entry kTypes[] = {
    {GgmlType::F32, {"F32", 1, 4, true}},
    {GgmlType::F16, {"F16", 1, 2, true}},
    {GgmlType::Q4_0, {"Q4_0", kQK4_0, sizeof(BlockQ4_0), true}},
    {GgmlType::Q4_1, {"Q4_1", kQK4_1, sizeof(BlockQ4_1), true}},
    {GgmlType::Q5_0, {"Q5_0", kQK5_0, sizeof(BlockQ5_0), true}},
    {GgmlType::Q5_1, {"Q5_1", kQK5_1, sizeof(BlockQ5_1), true}},
    {GgmlType::Q8_0, {"Q8_0", kQK8_0, sizeof(BlockQ8_0), true}},
    {GgmlType::Q8_1, {"Q8_1", 32, 36, false}},
    {GgmlType::Q2_K, {"Q2_K", kQK_K, 84, false}},
    {GgmlType::Q3_K, {"Q3_K", kQK_K, 110, false}},
    {GgmlType::Q4_K, {"Q4_K", kQK_K, sizeof(BlockQ4_K), true}},
    {GgmlType::Q5_K, {"Q5_K", kQK_K, sizeof(BlockQ5_K), true}},
    {GgmlType::Q6_K, {"Q6_K", kQK_K, sizeof(BlockQ6_K), true}},
    {GgmlType::Q8_K, {"Q8_K", kQK_K, 292, false}},
    {GgmlType::BF16, {"BF16", 1, 2, true}},
};

}  // namespace

std::string_view value_type_name(GgufValueType t) {
  static constexpr const char *names[] = {"u8",  "i8",  "u16",    "i16",   "u32", "i32", "f32",
                                          "bool", "string", "array", "u64", "i64", "f64"};
  return uint32_t(t) < 13 ? names[uint32_t(t)] : "unknown";
}

bool is_known_value_type(uint32_t t) { return t <= 12; }

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type) {
  for (const Entry &e : kTypes)
    if (uint32_t(e.type) == type) return e.traits;
  return std::nullopt;
}

const GgmlTypeTraits &ggml_type_traits(GgmlType type) {
  for (const Entry &e : kTypes)
    if (e.type == type) return e.traits;
  throw Error(fmt::format("ggml tensor type {} is not a known type", uint32_t(type)));
}

std::string ggml_type_name(uint32_t type) {
  auto traits = ggml_type_traits(type);
  return traits ? traits->name : fmt::format("type {}", type);
}

std::optional<GgmlType> parse_ggml_type(std::string_view name) {
  for (const Entry &e : kTypes) {
    std::string_view n = e.traits.name;
    if (!e.traits.supported || n.size() != name.size()) continue;
    bool equal = true;
    for (size_t i = 0; i < n.size(); ++i) equal &= std::toupper(uint8_t(name[i])) == n[i];
    if (equal) return e.type;
  }
  return std::nullopt;
}

}  // namespace kdsl::models
