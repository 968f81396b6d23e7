// gguf_value.cpp - conversions and printing of GGUF metadata values
#include "models/gguf/gguf_value.h"

#include <fmt/format.h>

namespace kdsl::models {

bool GgufArray::operator==(const GgufArray &other) const { return type == other.type && values == other.values; }

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
          return v.size() <= 60 ? fmt::format("\"{}\"", v) : fmt::format("\"{}...\" ({} bytes)", v.substr(0, 60), v.size());
        } else if constexpr (std::is_same_v<T, GgufArray>) {
          std::string s = fmt::format("{}[{}]", value_type_name(v.type), v.values.size());
          if (v.values.empty()) return s;
          s += " {";
          for (size_t i = 0; i < v.values.size() && i < 4; ++i) s += (i ? ", " : "") + v.values[i].to_string();
          return s + (v.values.size() > 4 ? ", ...}" : "}");
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
