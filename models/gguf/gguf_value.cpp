// gguf_value.cpp - conversions and printing of GGUF metadata values
#include "models/gguf/gguf_value.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include "models/common/printable.h"

namespace kdsl::models {

namespace {

// Bytes one number or bool element occupies; 0 for strings and arrays.
size_t element_bytes(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::Bool: return 1;
    case GgufValueType::U16: case GgufValueType::I16: return 2;
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::F32: return 4;
    case GgufValueType::U64: case GgufValueType::I64: case GgufValueType::F64: return 8;
    default: return 0;
  }
}

template <class T>
GgufValue load(const std::byte *p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return GgufValue(v);
}

}  // namespace

GgufArrayRef::GgufArrayRef(GgufArray array) : array_(std::make_shared<const GgufArray>(std::move(array))) {}

bool GgufArrayRef::operator==(const GgufArrayRef &other) const { return *array_ == *other.array_; }

GgufArray::GgufArray(GgufValueType type, const std::vector<GgufValue> &values) : type_(type) {
  for (const GgufValue &v : values) push_back(v);
}

void GgufArray::check_element(size_t i, GgufValueType expected, bool whole) const {
  if (type_ != expected)
    throw Error(fmt::format("GGUF array: reading an array of {} as {}: a bug in kdsl", value_type_name(type_),
                            value_type_name(expected)));
  if (!whole && i >= size_)
    throw Error(fmt::format("GGUF array: element {} of {}: a bug in kdsl", i, size_));
}

GgufValue GgufArray::operator[](size_t i) const {
  if (i >= size_) throw Error(fmt::format("GGUF array: element {} of {}: a bug in kdsl", i, size_));
  const std::byte *p = bytes_.data() + i * element_bytes(type_);
  switch (type_) {
    case GgufValueType::U8: return load<uint8_t>(p);
    case GgufValueType::I8: return load<int8_t>(p);
    case GgufValueType::U16: return load<uint16_t>(p);
    case GgufValueType::I16: return load<int16_t>(p);
    case GgufValueType::U32: return load<uint32_t>(p);
    case GgufValueType::I32: return load<int32_t>(p);
    case GgufValueType::F32: return load<float>(p);
    case GgufValueType::U64: return load<uint64_t>(p);
    case GgufValueType::I64: return load<int64_t>(p);
    case GgufValueType::F64: return load<double>(p);
    case GgufValueType::Bool: return *p != std::byte{0};
    case GgufValueType::String: return string(i);
    case GgufValueType::Array: return arrays_[i];
  }
  return {};
}

std::string_view GgufArray::string(size_t i) const {
  check_element(i, GgufValueType::String);
  uint64_t begin = i == 0 ? 0 : ends_[i - 1];
  return std::string_view(reinterpret_cast<const char *>(bytes_.data()) + begin, size_t(ends_[i] - begin));
}

const GgufArray &GgufArray::array(size_t i) const {
  check_element(i, GgufValueType::Array);
  return arrays_[i].as_array();
}

void GgufArray::push_back(const GgufValue &v) {
  if (v.type() != type_)
    throw Error(fmt::format("GGUF array of {}: cannot hold a {}", value_type_name(type_), value_type_name(v.type())));
  std::visit(
      [&](const auto &x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          append_string(x);
        } else if constexpr (std::is_same_v<T, GgufArrayRef>) {
          arrays_.push_back(v);
          ++size_;
        } else {
          append_bytes(std::string_view(reinterpret_cast<const char *>(&x), sizeof x), 1);
        }
      },
      v.storage());
}

void GgufArray::append_bytes(std::string_view little_endian, size_t n) {
  if (element_bytes(type_) == 0 || little_endian.size() != n * element_bytes(type_))
    throw Error(fmt::format("GGUF array of {}: {} bytes for {} elements: a bug in kdsl", value_type_name(type_),
                            little_endian.size(), n));
  const auto *p = reinterpret_cast<const std::byte *>(little_endian.data());
  bytes_.insert(bytes_.end(), p, p + little_endian.size());
  size_ += n;
}

void GgufArray::append_string(std::string_view s) {
  if (type_ != GgufValueType::String)
    throw Error(fmt::format("GGUF array of {}: cannot hold a string", value_type_name(type_)));
  const auto *p = reinterpret_cast<const std::byte *>(s.data());
  bytes_.insert(bytes_.end(), p, p + s.size());
  ends_.push_back(bytes_.size());
  ++size_;
}

bool GgufArray::operator==(const GgufArray &other) const {
  return type_ == other.type_ && size_ == other.size_ && bytes_ == other.bytes_ && ends_ == other.ends_ &&
         arrays_ == other.arrays_;
}

bool GgufValue::is_integer() const {
  switch (type()) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::U16: case GgufValueType::I16:
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::U64: case GgufValueType::I64:
      return true;
    default:
      return false;
  }
}

bool GgufValue::is_number() const {
  return is_integer() || type() == GgufValueType::F32 || type() == GgufValueType::F64;
}

int64_t GgufValue::to_int64() const {
  return std::visit(
      [](const auto &v) -> int64_t {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return int64_t(v);
        else return 0;
      },
      storage_);
}

double GgufValue::to_double() const {
  return std::visit(
      [](const auto &v) -> double {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) return double(v);
        else return 0;
      },
      storage_);
}

std::string GgufValue::to_string() const {
  return std::visit(
      [](const auto &v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          return fmt::format("\"{}\"", printable(v, 60));
        } else if constexpr (std::is_same_v<T, GgufArrayRef>) {
          const GgufArray &a = v.get();
          std::string s = fmt::format("{}[{}]", value_type_name(a.type()), a.size());
          if (a.empty()) return s;
          s += " {";
          for (size_t i = 0; i < a.size() && i < 4; ++i) s += (i ? ", " : "") + a[i].to_string();
          return s + (a.size() > 4 ? ", ...}" : "}");
        } else if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>) {
          return fmt::format("{}", int(v));
        } else {
          return fmt::format("{}", v);
        }
      },
      storage_);
}

}  // namespace kdsl::models
