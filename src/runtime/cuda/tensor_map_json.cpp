// tensor_map_json.cpp - TensorMapSpec <-> the "tensor_maps" metadata of a kernel cache entry, each field checked on the way back
#include "runtime/cuda/tensor_map_json.h"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <optional>

#include <kdsl/error.h>

#include "runtime/cuda/cuda_tensor_maps.h"

namespace kdsl::detail {
namespace {

nlohmann::json field_json(const codegen::TensorMapField &f) {
  if (f.param >= 0) return {{"param", f.param}};
  return {{"value", f.value}};
}

std::optional<DType> dtype_named(const std::string &name) {
#define X(e, text, storage, bytes) \
  if (name == text) return DType::e;
  KDSL_DTYPES(X)
#undef X
  return std::nullopt;
}

// An integer JSON value that fits int64_t.
std::optional<int64_t> integer(const nlohmann::json &v) {
  if (!v.is_number_integer()) return std::nullopt;
  if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())) return std::nullopt;
  return v.get<int64_t>();
}

class Reader {
 public:
  explicit Reader(const std::string &entry) : entry_(entry) {}

  std::vector<codegen::TensorMapSpec> maps(const nlohmann::json &j) const {
    if (!j.is_array()) fail("tensor_maps", "an array of tensor maps", j);
    std::vector<codegen::TensorMapSpec> out;
    for (size_t i = 0; i < j.size(); ++i) out.push_back(map(j[i], fmt::format("tensor_maps[{}]", i)));
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string &field, const std::string &expected, const nlohmann::json &found) const {
    throw Error(fmt::format("kernel cache entry '{}' has a malformed tensor map: {} must be {}, found {}; remove it from the cache directory", entry_,
                            field, expected, found.is_null() ? std::string("nothing") : found.dump()));
  }

  static const nlohmann::json &member(const nlohmann::json &m, const char *key) {
    static const nlohmann::json kMissing;  // null: "found nothing"
    auto it = m.find(key);
    return it == m.end() ? kMissing : *it;
  }

  int bounded(const nlohmann::json &m, const char *key, const std::string &where, int64_t lo, int64_t hi, const char *expected) const {
    const nlohmann::json &v = member(m, key);
    std::optional<int64_t> n = integer(v);
    if (!n || *n < lo || *n > hi) fail(where + "." + key, expected, v);
    return int(*n);
  }

  codegen::TensorMapField field(const nlohmann::json &m, const char *key, const std::string &where) const {
    const nlohmann::json &v = member(m, key);
    const char *expected = "{\"param\": <argument index>} or {\"value\": <integer>}";
    if (!v.is_object() || v.size() != 1) fail(where + "." + key, expected, v);
    codegen::TensorMapField f;
    if (v.contains("param")) {
      std::optional<int64_t> p = integer(v["param"]);
      if (!p || *p < 0 || *p > std::numeric_limits<int>::max()) fail(where + "." + key, expected, v);
      f.param = int(*p);
    } else if (v.contains("value")) {
      std::optional<int64_t> n = integer(v["value"]);
      if (!n) fail(where + "." + key, expected, v);
      f.value = *n;
    } else {
      fail(where + "." + key, expected, v);
    }
    return f;
  }

  codegen::TensorMapSpec map(const nlohmann::json &m, const std::string &where) const {
    if (!m.is_object()) fail(where, "an object", m);
    codegen::TensorMapSpec s;
    s.base = bounded(m, "base", where, 0, std::numeric_limits<int>::max(), "the index of the pointer argument");
    s.rows = field(m, "rows", where);
    s.cols = field(m, "cols", where);
    s.row_stride = field(m, "row_stride", where);
    if (m.contains("planes") || m.contains("plane_stride")) {  // absent: a 2-D map
      s.rank = 3;
      s.planes = field(m, "planes", where);
      s.plane_stride = field(m, "plane_stride", where);
    }

    const nlohmann::json &dtype = member(m, "dtype");
    std::optional<DType> elem = dtype.is_string() ? dtype_named(dtype.get<std::string>()) : std::nullopt;
    if (!elem || tensor_map_data_type(*elem) < 0)
      fail(where + ".dtype", "an element type TMA copies (f16, bf16, f32, f8e4m3, i8, u8, i16, i32, u32, i64)", dtype);
    s.elem = *elem;

    const nlohmann::json &box = member(m, "box");
    const int elem_bytes = dtype_bytes(s.elem);
    std::optional<int64_t> box_rows = box.is_array() && box.size() == 2 ? integer(box[0]) : std::nullopt;
    std::optional<int64_t> box_cols = box.is_array() && box.size() == 2 ? integer(box[1]) : std::nullopt;
    // TMA copies at most 256 elements along each dimension, and a box row of whole 16-byte units.
    if (!box_rows || !box_cols || *box_rows < 1 || *box_rows > 256 || *box_cols < 1 || *box_cols > 256 || *box_cols * elem_bytes % 16 != 0)
      fail(where + ".box", fmt::format("[rows, cols], each in [1, 256], cols * {} bytes ({}) a multiple of 16", elem_bytes, dtype_name(s.elem)), box);
    s.box_rows = int(*box_rows);
    s.box_cols = int(*box_cols);

    // A swizzle spans at least the box's row: the driver refuses a row wider than the swizzle.
    const nlohmann::json &swizzle = member(m, "swizzle");
    std::optional<int64_t> bytes = integer(swizzle);
    if (!bytes || tensor_map_swizzle(int(*bytes)) < 0 || (*bytes != 0 && s.box_cols * elem_bytes > *bytes))
      fail(where + ".swizzle", fmt::format("0, 32, 64 or 128 bytes, and not below the box's row of {} bytes unless 0", s.box_cols * elem_bytes), swizzle);
    s.swizzle_bytes = int(*bytes);
    if (m.contains("written")) {  // absent: read
      const nlohmann::json &written = m["written"];
      if (!written.is_boolean()) fail(where + ".written", "true or false", written);
      s.written = written.get<bool>();
    }
    return s;
  }

  const std::string &entry_;
};

}  // namespace

nlohmann::json tensor_maps_to_json(const std::vector<codegen::TensorMapSpec> &maps) {
  nlohmann::json out = nlohmann::json::array();
  for (const codegen::TensorMapSpec &s : maps) {
    out.push_back({{"base", s.base},
                   {"rows", field_json(s.rows)},
                   {"cols", field_json(s.cols)},
                   {"row_stride", field_json(s.row_stride)},
                   {"dtype", dtype_name(s.elem)},
                   {"box", {s.box_rows, s.box_cols}},
                   {"swizzle", s.swizzle_bytes},
                   {"written", s.written}});
    if (s.rank == 3) out.back()["planes"] = field_json(s.planes), out.back()["plane_stride"] = field_json(s.plane_stride);
  }
  return out;
}

std::vector<codegen::TensorMapSpec> tensor_maps_from_json(const nlohmann::json &maps, const std::string &entry) { return Reader(entry).maps(maps); }

}  // namespace kdsl::detail
