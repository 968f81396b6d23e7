// weight_type.h - how a weight matrix or table is stored: a plain element type or a ggml block-quantized format
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include <kdsl/dtype.h>

#include "models/gguf/quant_blocks.h"

namespace kdsl::kernels {

// The storage of a weight matrix (Library::matmul) or token table (Library::embedding).
//
// Why a kernels-level enum: kdsl::DType is an element type, the T of Ptr<T> and Block<T>,
// which the IR, tracer and every backend switch over; a block format such as Q8_0 (34 bytes
// per 32 values) has no element of its own, so it does not belong there. models::GgmlType
// names the formats but lives in kdsl_models (the file readers), which the kernel library
// does not depend on, and lists many types no kernel reads. WeightType lists exactly what
// the kernels run, so a switch over it is complete.
enum class WeightType : uint8_t { F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K };

// Geometry of a weight type: a row of `cols` elements (a multiple of block_elements) takes
// cols / block_elements * block_bytes bytes.
struct WeightTypeInfo {
  std::string_view name;
  int block_elements;
  int block_bytes;
};

constexpr WeightTypeInfo weight_type_info(WeightType t) {
  switch (t) {
    case WeightType::F32: return {"f32", 1, 4};
    case WeightType::F16: return {"f16", 1, 2};
    case WeightType::BF16: return {"bf16", 1, 2};
    case WeightType::Q8_0: return {"q8_0", models::kQK8_0, int(sizeof(models::BlockQ8_0))};
    case WeightType::Q4_0: return {"q4_0", models::kQK4_0, int(sizeof(models::BlockQ4_0))};
    case WeightType::Q4_K: return {"q4_k", models::kQK_K, int(sizeof(models::BlockQ4_K))};
    case WeightType::Q6_K: return {"q6_k", models::kQK_K, int(sizeof(models::BlockQ6_K))};
  }
  return {"?", 1, 0};
}

constexpr bool is_quantized(WeightType t) { return weight_type_info(t).block_elements > 1; }

// Bytes of `elements` values (a multiple of the block size) stored as t.
constexpr int64_t weight_bytes(WeightType t, int64_t elements) {
  WeightTypeInfo info = weight_type_info(t);
  return elements / info.block_elements * info.block_bytes;
}

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
