// dtype.h - kdsl element types: the run-time DType enum and the compile-time tags kernels use
#pragma once
#include <cstdint>
#include <string_view>

#include <kdsl/formats/fp8.h>
#include <kdsl/half.h>

namespace kdsl {

// X(enumerator, text name, host storage type, bytes)
#define KDSL_DTYPES(X)             \
  X(F32, "f32", float, 4)          \
  X(F16, "f16", kdsl::half, 2)     \
  X(BF16, "bf16", kdsl::bfloat16, 2) \
  X(I8, "i8", int8_t, 1)           \
  X(U8, "u8", uint8_t, 1)          \
  X(I16, "i16", int16_t, 2)        \
  X(I32, "i32", int32_t, 4)        \
  X(I64, "i64", int64_t, 8)        \
  X(U32, "u32", uint32_t, 4)       \
  X(Bool, "i1", bool, 1)             \
  X(F8E4M3, "f8e4m3", kdsl::float8_e4m3, 1)

enum class DType : uint8_t {
#define X(e, name, storage, bytes) e,
  KDSL_DTYPES(X)
#undef X
};

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
#define X(e, name, storage, bytes) \
  case DType::e:                   \
    return name;
    KDSL_DTYPES(X)
#undef X
  }
  return "?";
}

constexpr int dtype_bytes(DType t) {
  switch (t) {
#define X(e, name, storage, bytes) \
  case DType::e:                   \
    return bytes;
    KDSL_DTYPES(X)
#undef X
  }
  return 0;
}

// f16, bf16 and f8e4m3 are storage types: their values compute in f32 and are rounded to
// the type after each op (element_semantics.h).
constexpr bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F8E4M3; }
constexpr bool is_unsigned(DType t) { return t == DType::U8 || t == DType::U32 || t == DType::Bool; }
constexpr bool is_integer(DType t) { return !is_float(t); }

// Compile-time element type tags: Block<f16, 64>, Ptr<bf16>. `storage` is the host type a
// launch argument or buffer holds.
#define X(e, name, storage_type, bytes)                  \
  struct e##_tag {                                       \
    using storage = storage_type;                        \
    static constexpr DType dtype = DType::e;             \
    static constexpr std::string_view text = name;       \
  };
KDSL_DTYPES(X)
#undef X

using f32 = F32_tag;
using f16 = F16_tag;
using bf16 = BF16_tag;
using f8e4m3 = F8E4M3_tag;  // OCP FP8 E4M3 ("e4m3fn": no infinities, largest finite 448), Hopper's tensor-core fp8
using i8 = I8_tag;
using u8 = U8_tag;
using i16 = I16_tag;
using i32 = I32_tag;
using i64 = I64_tag;
using u32 = U32_tag;
using boolean = Bool_tag;

template <class T>
concept ElementType = requires {
  { T::dtype } -> std::convertible_to<DType>;
  typename T::storage;
};

}  // namespace kdsl
