// weight_type.h - how a weight matrix or table is stored, as the kernel library names it: the formats table's WeightType
#pragma once
#include <optional>

#include <kdsl/dtype.h>
#include <kdsl/formats/weight_types.h>

namespace kdsl::kernels {

// The storage of a weight matrix (Library::matmul) or token table (Library::embedding): a row of
// include/kdsl/formats/weight_types.def. The library runs the rows whose `kernels` is not None.
using formats::is_quantized;
using formats::weight_bytes;
using formats::weight_type_info;
using formats::WeightType;
using formats::WeightTypeInfo;

// The plain element types as weight types, and back (nullopt for a quantized type).
constexpr std::optional<WeightType> weight_type_of(DType t) {
  switch (t) {
    case DType::F32: return WeightType::F32;
    case DType::F16: return WeightType::F16;
    case DType::BF16: return WeightType::BF16;
    default: return std::nullopt;
  }
}
constexpr std::optional<DType> dtype_of(WeightType t) {
  switch (t) {
    case WeightType::F32: return DType::F32;
    case WeightType::F16: return DType::F16;
    case WeightType::BF16: return DType::BF16;
    default: return std::nullopt;
  }
}

}  // namespace kdsl::kernels
