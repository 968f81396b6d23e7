// quantize_model.cpp - llama.cpp's per-tensor type rules, and a GGUF model rewritten tensor by tensor in the types they choose
#include "models/gguf/quantize_model.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <thread>
#include <fmt/format.h>
#include <kdsl/error.h>

#include "models/gguf/dequantize.h"
#include "models/gguf/gguf_writer.h"
#include "models/gguf/quantize.h"

namespace kdsl::models {

namespace {

// llama.cpp's mixes kdsl writes: name, base type, general.file_type (its llama_ftype).
struct Mix {
  std::string_view name;
  GgmlType base;
  uint32_t ftype;
};
constexpr Mix kMixes[] = {{"Q4_K_M", GgmlType::Q4_K, 15}, {"Q5_K_M", GgmlType::Q5_K, 17}};

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(uint8_t(a[i])) != std::tolower(uint8_t(b[i]))) return false;
  return true;
}

// llama.cpp's use_more_bits: the first and last eighths of the layers, and every third between.
bool use_more_bits(int layer, int n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

// "blk.12.ffn_down.weight" -> 12; -1 without a block index.
int layer_of(const std::string &name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  size_t end = name.find('.', 4);
  if (end == std::string::npos) return -1;
  try {
    return std::stoi(name.substr(4, end - 4));
  } catch (const std::exception &) {
    return -1;
  }
}

double bits_per_weight(GgmlType t) {
  const formats::WeightTypeInfo &info = ggml_type_traits(t);
  return 8.0 * info.block_bytes / info.block_elements;
}

bool contains(const std::string &s, std::string_view part) { return s.find(part) != std::string::npos; }

// The type a row of `cols` values can take when `type`'s blocks do not divide it.
GgmlType fallback_for(GgmlType type, int64_t cols) {
  auto fits = [&](GgmlType t) { return cols % ggml_type_traits(t).block_elements == 0; };
  if (fits(type)) return type;
  GgmlType next = GgmlType::F16;
  switch (type) {
    case GgmlType::Q4_K: next = GgmlType::Q5_0; break;
    case GgmlType::Q5_K: next = GgmlType::Q5_1; break;
    case GgmlType::Q6_K: next = GgmlType::Q8_0; break;
    default: break;
  }
  return fits(next) ? next : GgmlType::F16;
}

}  // namespace

std::optional<QuantizeTarget> parse_quantize_target(std::string_view text) {
  for (const Mix &m : kMixes)
    if (equal_ignoring_case(text, m.name)) return QuantizeTarget{std::string(m.name), m.base, true, m.ftype};
  std::optional<GgmlType> t = parse_ggml_type(text);
  if (!t) return std::nullopt;
  const formats::WeightTypeInfo &info = ggml_type_traits(*t);
  if (info.kdsl_only()) return QuantizeTarget{std::string(info.ggml_name), *t, false, std::nullopt};
  if (info.llama_ftype < 0) return std::nullopt;
  return QuantizeTarget{std::string(info.ggml_name), *t, false, uint32_t(info.llama_ftype)};
}

std::string quantize_target_names() {
  std::string out = formats::weight_type_names([](const formats::WeightTypeInfo &t) { return t.readable && (t.llama_ftype >= 0 || t.kdsl_only()); });
  for (const Mix &m : kMixes) out += fmt::format(", {}", m.name);
  return out;
}

GgmlType quantize_type_for(const QuantizeTarget &target, bool pure, const std::string &name, const std::vector<int64_t> &shape,
                           bool has_output, int n_layer, int n_gqa, bool has_imatrix) {
  if (shape.size() < 2) return GgmlType::F32;  // norms and biases: read as f32 by the kernels
  GgmlType type = target.base;
  if (!pure && formats::is_quantized(target.base)) {
    bool classifier = name == "output.weight" || (!has_output && name == "token_embd.weight");
    if (classifier && bits_per_weight(target.base) < bits_per_weight(GgmlType::Q6_K)) type = GgmlType::Q6_K;
    int layer = layer_of(name);
    if (target.medium_mix && layer >= 0 && (contains(name, "attn_v.weight") || contains(name, "ffn_down")) && use_more_bits(layer, n_layer))
      type = GgmlType::Q6_K;
    // IQ4_NL: attn_v where 4 or more query heads share a KV head, and (without an importance
    // matrix) ffn_down in the first eighth of the layers, take Q5_K.
    const bool first_eighth_down = contains(name, "ffn_down") && layer >= 0 && layer < n_layer / 8;
    if (target.base == GgmlType::IQ4_NL && ((contains(name, "attn_v.weight") && n_gqa >= 4) || (first_eighth_down && !has_imatrix)))
      type = GgmlType::Q5_K;
    // Q4_0 / Q5_0 with an importance matrix: the first eighth's ffn_down, which llama.cpp found
    // to go wrong even then, takes the affine Q4_1 / Q5_1.
    if (has_imatrix && first_eighth_down && !target.medium_mix && (target.base == GgmlType::Q4_0 || target.base == GgmlType::Q5_0))
      type = target.base == GgmlType::Q4_0 ? GgmlType::Q4_1 : GgmlType::Q5_1;
  }
  return fallback_for(type, shape[0]);
}

QuantizeSummary quantize_model(const std::string &in, const std::string &out, const QuantizeTarget &target, const QuantizeOptions &options,
                               const std::function<void(const QuantizeProgress &)> &progress) {
  const int threads = options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  const ImportanceMatrix *imatrix = options.imatrix;
  auto start = std::chrono::steady_clock::now();
  GgufFile file(in);
  std::string arch = file.find_string("general.architecture").value_or("llama");
  int n_layer = int(file.find_int(arch + ".block_count").value_or(0));
  int64_t n_head = file.find_int(arch + ".attention.head_count").value_or(1);
  int64_t n_head_kv = file.find_int(arch + ".attention.head_count_kv").value_or(n_head);
  int n_gqa = n_head_kv > 0 ? int(n_head / n_head_kv) : 1;
  bool has_output = file.find_tensor("output.weight") != nullptr;

  GgufWriter writer(file.version() >= 3 ? 3 : file.version());
  for (const auto &[key, value] : file.metadata())
    if (key != "general.file_type" || target.llama_ftype) writer.set(key, value);
  if (target.llama_ftype) writer.set("general.file_type", GgufValue(*target.llama_ftype));
  writer.set("general.quantization_version", GgufValue(uint32_t(2)));
  if (imatrix) {  // as llama-quantize records it
    writer.set("quantize.imatrix.file", GgufValue(options.imatrix_file));
    if (!imatrix->datasets.empty()) writer.set("quantize.imatrix.dataset", GgufValue(imatrix->datasets[0]));
    writer.set("quantize.imatrix.entries_count", GgufValue(int32_t(imatrix->entries.size())));
    if (imatrix->chunk_count > 0) writer.set("quantize.imatrix.chunks_count", GgufValue(int32_t(imatrix->chunk_count)));
  }

  QuantizeSummary summary;
  const auto &tensors = file.tensors();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const GgufTensorInfo *t = &tensors[i];
    GgmlType to = t->shape.size() < 2 ? t->type
                                      : quantize_type_for(target, options.pure, t->name, t->shape, has_output, n_layer, n_gqa, imatrix != nullptr);
    // The importance of each column, where the matrix is requantized and the matrix has some.
    std::vector<float> importance;
    if (imatrix && to != t->type)
      importance = imatrix->column_weights(t->name, t->shape[0], options.imatrix_file, fmt::format("{}'s tensor {}", in, t->shape_string()));
    summary.tensors++;
    summary.quantized += to != t->type;
    summary.weighted += !importance.empty();
    summary.bytes_in += t->bytes;
    summary.elements += t->elements();
    const int count = int(tensors.size());
    // Filled at write time, one tensor at a time, from the mapped input.
    writer.add_tensor(t->name, t->shape, to, [t, to, i, count, threads, &progress, importance = std::move(importance)](std::span<std::byte> dst) {
      if (progress) progress({int(i), count, t, to, !importance.empty()});
      if (to == t->type) {
        std::memcpy(dst.data(), t->data, dst.size());
        return;
      }
      const int64_t cols = t->shape[0], rows = t->elements() / cols;
      const uint64_t row_in = GgufWriter::tensor_bytes(t->type, {cols}), row_out = GgufWriter::tensor_bytes(to, {cols});
      const float *weights = importance.empty() ? nullptr : importance.data();
      // Rows split evenly over the threads; each writes only its own rows' bytes.
      auto convert = [&](int64_t first, int64_t last) {
        std::vector<float> row(static_cast<size_t>(cols));
        for (int64_t r = first; r < last; ++r) {
          dequantize_row(t->type, t->data + r * row_in, row.data(), cols);
          quantize_row(to, row.data(), dst.data() + r * row_out, cols, weights);
        }
      };
      const int64_t n = std::clamp<int64_t>(threads, 1, rows);
      std::vector<std::thread> pool;
      for (int64_t k = 1; k < n; ++k) pool.emplace_back(convert, rows * k / n, rows * (k + 1) / n);
      convert(0, rows / n);
      for (std::thread &th : pool) th.join();
    });
    summary.bytes_out += GgufWriter::tensor_bytes(to, t->shape);
  }
  writer.write(out);
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace kdsl::models
