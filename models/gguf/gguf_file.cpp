// gguf_file.cpp - typed metadata lookups and tensor lookups with errors that name the file and key
#include "models/gguf/gguf_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <kdsl/error.h>

#include "models/common/mapped_file.h"

namespace kdsl::models {

int64_t GgufTensorInfo::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string GgufTensorInfo::shape_string() const { return fmt::format("[{}]", fmt::join(shape, ", ")); }

const GgufValue *GgufFile::find(std::string_view key) const {
  for (const auto &[k, v] : metadata_)
    if (k == key) return &v;
  return nullptr;
}

const GgufValue &GgufFile::get(std::string_view key) const {
  const GgufValue *v = find(key);
  if (!v) throw Error(fmt::format("{}: metadata '{}' is missing", name_, key));
  return *v;
}

namespace {

[[noreturn]] void wrong_type(const std::string &file, std::string_view key, std::string_view expected,
                             const GgufValue &v) {
  throw Error(fmt::format("{}: metadata '{}': expected {}, found {} {}", file, key, expected, value_type_name(v.type()),
                          v.to_string()));
}

}  // namespace

std::string GgufFile::get_string(std::string_view key) const {
  const GgufValue &v = get(key);
  if (v.type() != GgufValueType::String) wrong_type(name_, key, "a string", v);
  return v.as_string();
}

int64_t GgufFile::get_int(std::string_view key) const {
  const GgufValue &v = get(key);
  if (!v.is_integer()) wrong_type(name_, key, "an integer", v);
  if (v.type() == GgufValueType::U64 && std::get<uint64_t>(v.storage()) > uint64_t(INT64_MAX))
    throw Error(fmt::format("{}: metadata '{}': value {} is too large", name_, key, v.to_string()));
  return v.to_int64();
}

double GgufFile::get_float(std::string_view key) const {
  const GgufValue &v = get(key);
  if (!v.is_number()) wrong_type(name_, key, "a number", v);
  return v.to_double();
}

bool GgufFile::get_bool(std::string_view key) const {
  const GgufValue &v = get(key);
  if (v.type() != GgufValueType::Bool) wrong_type(name_, key, "a bool", v);
  return v.as_bool();
}

std::optional<std::string> GgufFile::find_string(std::string_view key) const {
  return has(key) ? std::optional(get_string(key)) : std::nullopt;
}
std::optional<int64_t> GgufFile::find_int(std::string_view key) const {
  return has(key) ? std::optional(get_int(key)) : std::nullopt;
}
std::optional<double> GgufFile::find_float(std::string_view key) const {
  return has(key) ? std::optional(get_float(key)) : std::nullopt;
}
std::optional<bool> GgufFile::find_bool(std::string_view key) const {
  return has(key) ? std::optional(get_bool(key)) : std::nullopt;
}

const GgufArray &GgufFile::get_array(std::string_view key, GgufValueType element) const {
  const GgufValue &v = get(key);
  if (v.type() != GgufValueType::Array || v.as_array().type() != element)
    wrong_type(name_, key, fmt::format("an array of {}", value_type_name(element)), v);
  return v.as_array();
}

std::vector<std::string> GgufFile::get_string_array(std::string_view key) const {
  const GgufArray &a = get_array(key, GgufValueType::String);
  std::vector<std::string> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) out.emplace_back(a.string(i));
  return out;
}

const GgufTensorInfo *GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensorInfo &GgufFile::tensor(std::string_view name) const {
  const GgufTensorInfo *t = find_tensor(name);
  if (!t) throw Error(fmt::format("{}: tensor '{}' is missing", name_, name));
  return *t;
}

}  // namespace kdsl::models
