// weight_types.h - WeightType and its traits, expanded from weight_types.def: the one table of weight formats
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include <kdsl/formats/half.h>
#include <kdsl/formats/quant_blocks.h>

namespace kdsl::formats {

// A weight's storage: a plain float type or a ggml block format, numbered as ggml numbers
// them, so a GGUF tensor's type id is a WeightType as it stands. kdsl::DType is an element
// type (the T of Ptr<T>), which a block format such as Q8_0 (34 bytes per 32 values) has not,
// so the two stay apart; kernels::WeightType and models::GgmlType are this enum.
enum class WeightType : uint32_t {
#define KDSL_WEIGHT_TYPE(Name, id, name, elements, bytes, Layout, kernels, ftype) Name = id,
#include <kdsl/formats/weight_types.def>
#undef KDSL_WEIGHT_TYPE
};

// Type ids from here up name formats ggml does not have (weight_types.def's last rows), far
// past ggml's own (under 64), so that ggml's new types never meet them. A GGUF file holding one
// loads in kdsl only; llama.cpp and gguf-py refuse it by its type id.
inline constexpr uint32_t kKdslOwnTypeIds = 4096;

// How the kernel library runs a type (weight_types.def says which protocol each follows).
enum class WeightKernels : uint8_t { None, Plain, Scaled, Decoded };

struct WeightTypeInfo {
  WeightType type;
  std::string_view name;       // kdsl's spelling, "q4_k": tools' --type values, messages
  std::string_view ggml_name;  // ggml's and llama.cpp's, "Q4_K"
  int block_elements;          // values per block (1 for plain floats)
  int block_bytes;
  bool readable;               // kdsl reads, dequantizes and quantizes it (it has a layout)
  WeightKernels kernels;
  int llama_ftype;             // general.file_type of a file of this type, -1 for none

  constexpr bool runs_in_kernels() const { return kernels != WeightKernels::None; }
  constexpr bool quantized() const { return block_elements > 1; }
  constexpr bool kdsl_only() const { return uint32_t(type) >= kKdslOwnTypeIds; }
};

namespace detail {
template <class Layout>
constexpr int layout_bytes() {
  if constexpr (std::is_void_v<Layout>) return 0;
  else return int(sizeof(Layout));
}
}  // namespace detail

#define KDSL_WEIGHT_TYPE(Name, id, name, elements, bytes, Layout, kernels, ftype)                                  \
  static_assert(std::is_void_v<Layout> || detail::layout_bytes<Layout>() == (bytes),                     \
                "weight_types.def: the block bytes of " #Name " must equal sizeof(" #Layout ")");
#include <kdsl/formats/weight_types.def>
#undef KDSL_WEIGHT_TYPE

inline constexpr std::array kWeightTypes = {
#define KDSL_WEIGHT_TYPE(Name, id, name, elements, bytes, Layout, kernels, ftype) \
  WeightTypeInfo{WeightType::Name, name, #Name, elements, bytes, !std::is_void_v<Layout>, WeightKernels::kernels, ftype},
#include <kdsl/formats/weight_types.def>
#undef KDSL_WEIGHT_TYPE
};

// The row of a type id, or nullptr for an id the table does not list.
constexpr const WeightTypeInfo *find_weight_type(uint32_t id) {
  for (const WeightTypeInfo &t : kWeightTypes)
    if (uint32_t(t.type) == id) return &t;
  return nullptr;
}

// Every WeightType enumerator has a row, so this always finds one.
constexpr const WeightTypeInfo &weight_type_info(WeightType t) { return *find_weight_type(uint32_t(t)); }

constexpr bool is_quantized(WeightType t) { return weight_type_info(t).quantized(); }

// Bytes of `elements` values (a multiple of the block size) stored as t.
constexpr int64_t weight_bytes(WeightType t, int64_t elements) {
  const WeightTypeInfo &info = weight_type_info(t);
  return elements / info.block_elements * info.block_bytes;
}

// A readable type from either spelling ("q4_k", "Q4_K", "Q4_k"); nullopt for anything else.
constexpr std::optional<WeightType> parse_weight_type(std::string_view text) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
  for (const WeightTypeInfo &t : kWeightTypes) {
    if (!t.readable || t.name.size() != text.size()) continue;
    bool equal = true;
    for (size_t i = 0; i < text.size(); ++i) equal = equal && lower(text[i]) == t.name[i];
    if (equal) return t.type;
  }
  return std::nullopt;
}

// The spellings of the types `keep` accepts, "f32, f16, ..." in table order (ggml's, "F32,
// F16, ...", with ggml_spelling): for the "expected one of" of a message.
template <class Keep>
std::string weight_type_names(Keep keep, bool ggml_spelling = false) {
  std::string out;
  for (const WeightTypeInfo &t : kWeightTypes)
    if (keep(t)) out += (out.empty() ? "" : ", ") + std::string(ggml_spelling ? t.ggml_name : t.name);
  return out;
}

}  // namespace kdsl::formats
