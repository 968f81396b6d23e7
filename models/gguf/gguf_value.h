// gguf_value.h - one GGUF metadata value: a scalar, a string or a (possibly nested) array
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "models/gguf/gguf_types.h"

namespace kdsl::models {

class GgufValue;

struct GgufArray {
  GgufValueType type = GgufValueType::U8;  // element type; nested arrays are Array
  std::vector<GgufValue> values;
  bool operator==(const GgufArray &other) const;
};

class GgufValue {
 public:
  // Alternatives in GgufValueType order, so the variant index is the type id.
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string,
                               GgufArray, uint64_t, int64_t, double>;

  GgufValue() = default;
  // Exactly the stored C++ type: GgufValue(uint32_t(4)) is a u32, GgufValue(4) does not compile.
  template <class T>
    requires(std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t> || std::is_same_v<T, uint16_t> ||
             std::is_same_v<T, int16_t> || std::is_same_v<T, uint32_t> || std::is_same_v<T, int32_t> ||
             std::is_same_v<T, float> || std::is_same_v<T, bool> || std::is_same_v<T, std::string> ||
             std::is_same_v<T, GgufArray> || std::is_same_v<T, uint64_t> || std::is_same_v<T, int64_t> ||
             std::is_same_v<T, double>)
  GgufValue(T value) : storage_(std::move(value)) {}
  GgufValue(const char *s) : storage_(std::string(s)) {}
  GgufValue(std::string_view s) : storage_(std::string(s)) {}

  // An array of `values`, each of the stored type T.
  template <class T>
  static GgufValue array(const std::vector<T> &values) {
    GgufArray a;
    a.type = GgufValue(values.empty() ? T{} : values[0]).type();
    for (const T &v : values) a.values.emplace_back(v);
    return GgufValue(std::move(a));
  }

  GgufValueType type() const { return GgufValueType(storage_.index()); }
  const Storage &storage() const { return storage_; }

  bool is_integer() const;
  bool is_number() const;  // integer or float
  // Any integer type as int64 (a u64 above INT64_MAX is not representable: check first).
  int64_t to_int64() const;
  double to_double() const;  // any integer or float type
  const std::string &as_string() const { return std::get<std::string>(storage_); }
  const GgufArray &as_array() const { return std::get<GgufArray>(storage_); }
  bool as_bool() const { return std::get<bool>(storage_); }

  // A short human-readable rendering; long arrays and strings are abbreviated.
  std::string to_string() const;

  bool operator==(const GgufValue &other) const { return storage_ == other.storage_; }

 private:
  Storage storage_;
};

}  // namespace kdsl::models
