// gguf_value.h - one GGUF metadata value: a scalar, a string or a (possibly nested) array
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "models/gguf/gguf_types.h"

namespace kdsl::models {

class GgufValue;

// The elements of one array, all of one type, stored compactly: numbers and bools as their
// little-endian bytes, strings back to back with their end offsets, and only nested arrays
// as GgufValues. A 64 MiB u8 array costs 64 MiB, not 40 bytes an element.
class GgufArray {
 public:
  GgufArray() = default;
  explicit GgufArray(GgufValueType type) : type_(type) {}
  // An array of `type` holding `values`; a value of another type throws kdsl::Error.
  GgufArray(GgufValueType type, const std::vector<GgufValue> &values);

  GgufValueType type() const { return type_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Element `i` as a value (a copy; for nested arrays, of the whole array).
  GgufValue operator[](size_t i) const;
  // Element `i` of a number or bool array whose element type is exactly T.
  template <class T>
  T number(size_t i) const {
    check_element(i, value_type_of<T>());
    T v;
    std::memcpy(&v, bytes_.data() + i * sizeof(T), sizeof(T));
    return v;
  }
  // Every element of a number array whose element type is exactly T.
  template <class T>
  std::vector<T> numbers() const {
    check_element(0, value_type_of<T>(), true);
    std::vector<T> out(size_);
    if (size_) std::memcpy(out.data(), bytes_.data(), size_ * sizeof(T));
    return out;
  }
  std::string_view string(size_t i) const;    // of a string array
  const GgufArray &array(size_t i) const;     // of an array of arrays

  void push_back(const GgufValue &v);  // throws kdsl::Error when `v` is not of the element type
  // The reader's bulk forms: `n` numbers or bools as their little-endian bytes, and one string.
  void append_bytes(std::string_view little_endian, size_t n);
  void append_string(std::string_view s);

  bool operator==(const GgufArray &other) const;

  template <class T>
  static GgufValueType value_type_of();  // the GGUF type of the C++ type T

 private:
  void check_element(size_t i, GgufValueType expected, bool whole = false) const;

  GgufValueType type_ = GgufValueType::U8;  // element type; nested arrays are Array
  size_t size_ = 0;
  std::vector<std::byte> bytes_;   // numbers and bools; strings back to back
  std::vector<uint64_t> ends_;     // strings: where each ends in bytes_
  std::vector<GgufValue> arrays_;  // arrays of arrays
};

// An array held by pointer, so that a scalar GgufValue stays small (40 bytes); values are
// never changed once made, so copies share the elements.
class GgufArrayRef {
 public:
  GgufArrayRef(GgufArray array);
  const GgufArray &get() const { return *array_; }
  bool operator==(const GgufArrayRef &other) const;

 private:
  std::shared_ptr<const GgufArray> array_;
};

class GgufValue {
 public:
  // Alternatives in GgufValueType order, so the variant index is the type id.
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string,
                               GgufArrayRef, uint64_t, int64_t, double>;

  GgufValue() = default;
  // Exactly the stored C++ type: GgufValue(uint32_t(4)) is a u32, GgufValue(4) does not compile.
  template <class T>
    requires(std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t> || std::is_same_v<T, uint16_t> ||
             std::is_same_v<T, int16_t> || std::is_same_v<T, uint32_t> || std::is_same_v<T, int32_t> ||
             std::is_same_v<T, float> || std::is_same_v<T, bool> || std::is_same_v<T, std::string> ||
             std::is_same_v<T, uint64_t> || std::is_same_v<T, int64_t> || std::is_same_v<T, double>)
  GgufValue(T value) : storage_(std::move(value)) {}
  GgufValue(GgufArray array) : storage_(GgufArrayRef(std::move(array))) {}
  GgufValue(const char *s) : storage_(std::string(s)) {}
  GgufValue(std::string_view s) : storage_(std::string(s)) {}

  // An array of `values`, each of the stored type T.
  template <class T>
  static GgufValue array(const std::vector<T> &values) {
    GgufArray a(GgufValue(T{}).type());
    for (const T &v : values) a.push_back(GgufValue(v));
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
  const GgufArray &as_array() const { return std::get<GgufArrayRef>(storage_).get(); }
  bool as_bool() const { return std::get<bool>(storage_); }

  // A short human-readable rendering; long arrays and strings are abbreviated.
  std::string to_string() const;

  bool operator==(const GgufValue &other) const { return storage_ == other.storage_; }

 private:
  Storage storage_;
};

template <class T>
GgufValueType GgufArray::value_type_of() {
  return GgufValue(T{}).type();
}

}  // namespace kdsl::models
