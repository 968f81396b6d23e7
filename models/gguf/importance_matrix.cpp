// importance_matrix.cpp - squared activations summed per weight column, and llama.cpp's two importance-matrix file forms
#include "models/gguf/importance_matrix.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_writer.h"

namespace kdsl::models {
namespace {

constexpr std::string_view kSumsSuffix = ".in_sum2", kCountsSuffix = ".counts";

bool strip_suffix(std::string &name, std::string_view suffix) {
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  name.resize(name.size() - suffix.size());
  return true;
}

void check_finite(const std::string &path, const std::string &name, std::span<const double> values) {
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i]) || values[i] < 0)
      throw Error(fmt::format("{}: entry '{}': sum of squares {} is {}: expected a finite value >= 0", path, name, i, values[i]));
}

// The GGUF form llama-imatrix writes: per weight an f32 "<weight>.in_sum2" of [columns,
// matrices] raw sums and an f32 "<weight>.counts" of [1, matrices] rows summed. kdsl's models
// have one matrix per weight (no experts).
ImportanceMatrix load_gguf(const std::string &path) {
  GgufFile file(path);
  ImportanceMatrix m;
  if (file.has("imatrix.datasets")) m.datasets = file.get_string_array("imatrix.datasets");
  m.chunk_count = int(file.find_int("imatrix.chunk_count").value_or(0));
  m.chunk_size = int(file.find_int("imatrix.chunk_size").value_or(0));
  std::map<std::string, std::pair<const GgufTensorInfo *, const GgufTensorInfo *>> parts;  // sums, counts
  for (const GgufTensorInfo &t : file.tensors()) {
    std::string name = t.name;
    if (strip_suffix(name, kSumsSuffix)) parts[name].first = &t;
    else if (strip_suffix(name, kCountsSuffix)) parts[name].second = &t;
  }
  if (parts.empty())
    throw Error(fmt::format("{}: no importance data: expected tensors named '<weight>{}' and '<weight>{}' (is this a model rather than an imatrix?)",
                            path, kSumsSuffix, kCountsSuffix));
  for (const auto &[name, pair] : parts) {
    const auto [sums, counts] = pair;
    if (!sums || !counts)
      throw Error(fmt::format("{}: entry '{}' has {} but no {} tensor", path, name, sums ? kSumsSuffix : kCountsSuffix,
                              sums ? kCountsSuffix : kSumsSuffix));
    for (const GgufTensorInfo *t : {sums, counts})
      if (t->type != GgmlType::F32)
        throw Error(fmt::format("{}: tensor '{}': type {}, expected F32", path, t->name, ggml_type_traits(t->type).ggml_name));
    int64_t matrices = counts->elements();
    if (matrices != 1 || sums->elements() == 0)
      throw Error(fmt::format("{}: entry '{}': {} matrices of {} values: kdsl's models have one matrix per weight (no experts)", path, name,
                              matrices, sums->elements()));
    float rows;
    std::memcpy(&rows, counts->data, sizeof rows);
    if (!std::isfinite(rows) || rows < 0 || rows != std::floor(rows))
      throw Error(fmt::format("{}: tensor '{}': count {} is not a whole number of rows", path, counts->name, rows));
    ImportanceEntry e;
    e.rows = int64_t(rows);
    e.sum_squares.resize(size_t(sums->elements()));
    for (size_t i = 0; i < e.sum_squares.size(); ++i) {
      float v;
      std::memcpy(&v, sums->data + i * sizeof(float), sizeof v);
      e.sum_squares[i] = v;
    }
    check_finite(path, name, e.sum_squares);
    m.entries.emplace(name, std::move(e));
  }
  return m;
}

// Bounds-checked reads of the .dat form.
struct DatReader {
  const std::string &path;
  std::span<const char> bytes;
  size_t at = 0;
  template <class T>
  T read(const std::string &what) {
    if (bytes.size() - at < sizeof(T))
      throw Error(fmt::format("{}: {}: the file ends at byte {} (a truncated or foreign .dat importance matrix)", path, what, bytes.size()));
    T v;
    std::memcpy(&v, bytes.data() + at, sizeof v);
    at += sizeof v;
    return v;
  }
  std::string read_string(const std::string &what, int32_t length) {
    if (length < 0 || size_t(length) > bytes.size() - at)
      throw Error(fmt::format("{}: {}: length {} runs past the end of the file ({} bytes)", path, what, length, bytes.size()));
    std::string s(bytes.data() + at, size_t(length));
    at += size_t(length);
    return s;
  }
};

// The older .dat form: int32 entries; per entry int32 name length, name, int32 ncall, int32
// values, float values (each (sum / rows) * ncall); then optionally int32 chunks and a
// dataset name. Read as sums of ncall rows, so the mean squares come out as stored / ncall.
ImportanceMatrix load_dat(const std::string &path, std::span<const char> bytes) {
  DatReader r{path, bytes};
  ImportanceMatrix m;
  int32_t entries = r.read<int32_t>("entry count");
  if (entries < 1) throw Error(fmt::format("{}: entry count {}: expected at least 1 (neither GGUF nor a .dat importance matrix)", path, entries));
  for (int32_t i = 0; i < entries; ++i) {
    std::string where = fmt::format("entry {}", i);
    std::string name = r.read_string(where + " name", r.read<int32_t>(where + " name length"));
    where = fmt::format("entry {} ('{}')", i, name);
    int32_t ncall = r.read<int32_t>(where + " call count"), values = r.read<int32_t>(where + " value count");
    if (ncall < 0 || values < 1 || size_t(values) > (r.bytes.size() - r.at) / sizeof(float))
      throw Error(fmt::format("{}: {}: {} calls and {} values do not fit the file's {} bytes", path, where, ncall, values, bytes.size()));
    ImportanceEntry e;
    e.rows = ncall;
    e.sum_squares.resize(size_t(values));
    for (double &v : e.sum_squares) v = r.read<float>(where + " values");
    check_finite(path, name, e.sum_squares);
    if (!m.entries.emplace(name, std::move(e)).second) throw Error(fmt::format("{}: {} appears twice", path, where));
  }
  if (r.at < bytes.size()) {  // the chunk count and dataset name are optional
    m.chunk_count = r.read<int32_t>("chunk count");
    if (r.at < bytes.size()) {
      std::string dataset = r.read_string("dataset name", r.read<int32_t>("dataset name length"));
      if (!dataset.empty()) m.datasets.push_back(dataset);
    }
  }
  return m;
}

}  // namespace

std::vector<float> ImportanceEntry::mean_squares() const {
  std::vector<float> out(sum_squares.size(), 1.0f);
  if (rows > 0)
    for (size_t i = 0; i < out.size(); ++i) out[i] = float(sum_squares[i] / double(rows));
  return out;
}

void ImportanceMatrix::add(const std::string &tensor, std::span<const float> rows, int cols) {
  ImportanceEntry &e = entries[tensor];
  if (e.sum_squares.empty()) e.sum_squares.resize(size_t(cols));
  if (cols <= 0 || e.sum_squares.size() != size_t(cols))
    throw Error(fmt::format("importance matrix: '{}' was given rows of {} columns, earlier of {}", tensor, cols, e.sum_squares.size()));
  const size_t n = rows.size() / size_t(cols);
  for (size_t r = 0; r < n; ++r) {
    const float *x = rows.data() + r * size_t(cols);
    for (size_t j = 0; j < size_t(cols); ++j) e.sum_squares[j] += double(x[j]) * double(x[j]);
  }
  e.rows += int64_t(n);
}

const ImportanceEntry *ImportanceMatrix::find(std::string_view tensor) const {
  auto it = entries.find(std::string(tensor));
  return it == entries.end() ? nullptr : &it->second;
}

std::vector<float> ImportanceMatrix::column_weights(const std::string &tensor, int64_t cols, std::string_view source, std::string_view matrix) const {
  const ImportanceEntry *e = find(tensor);
  if (!e) return {};
  if (int64_t(e->sum_squares.size()) != cols)
    throw Error(fmt::format("{}: entry '{}' has {} columns, but {} has rows of {}: an importance matrix of another model?", source, tensor,
                            e->sum_squares.size(), matrix, cols));
  return e->mean_squares();
}

void ImportanceMatrix::save(const std::string &path) const {
  if (entries.empty()) throw Error(fmt::format("{}: no importance data to write (no forward pass was observed)", path));
  GgufWriter w;
  w.set("general.type", GgufValue("imatrix"));
  w.set("imatrix.datasets", GgufValue::array(datasets));
  w.set("imatrix.chunk_count", GgufValue(uint32_t(chunk_count)));
  w.set("imatrix.chunk_size", GgufValue(uint32_t(chunk_size)));
  for (const auto &[name, e] : entries) {  // std::map: sorted by name, as llama-imatrix writes them
    std::vector<float> sums(e.sum_squares.begin(), e.sum_squares.end());
    float rows = float(e.rows);
    w.add_tensor(name + std::string(kSumsSuffix), {int64_t(sums.size()), 1}, GgmlType::F32, std::as_bytes(std::span<const float>(sums)));
    w.add_tensor(name + std::string(kCountsSuffix), {1, 1}, GgmlType::F32, std::as_bytes(std::span<const float>(&rows, 1)));
  }
  w.write(path);
}

ImportanceMatrix ImportanceMatrix::load(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("{}: cannot open the importance matrix", path));
  char magic[4] = {};
  if (f.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0) return load_gguf(path);  // mapped, not read here
  f.clear();
  f.seekg(0);
  std::vector<char> bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  return load_dat(path, bytes);
}

}  // namespace kdsl::models
