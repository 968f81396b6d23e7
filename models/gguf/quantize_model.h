// quantize_model.h - a whole GGUF model requantized to one type or one of llama.cpp's mixes (Q4_K_M, Q5_K_M), as kdsl-quantize runs it
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/gguf/gguf_file.h"
#include "models/gguf/importance_matrix.h"

namespace kdsl::models {

// What kdsl-quantize was asked for: a readable type ("q8_0", "Q4_K") or a mix ("Q4_K_M",
// "Q5_K_M"). `base` is the type of the ordinary matrices; a mix (and, unless pure, every
// quantized type) keeps some tensors at higher precision (quantize_type_for says which). kdsl's
// own types (f8_e4m3) are targets too; their files load in kdsl only.
struct QuantizeTarget {
  std::string name;        // as llama.cpp spells it: "Q4_K_M", "Q8_0"
  GgmlType base;
  bool medium_mix = false;  // the "_M" mixes: attn_v and ffn_down of some layers in Q6_K
  std::optional<uint32_t> llama_ftype;  // general.file_type; none for kdsl's own types (ggml has no FP8), whose files only kdsl reads
};

// Parses a TYPE argument (case-insensitive); nullopt for anything else.
std::optional<QuantizeTarget> parse_quantize_target(std::string_view text);
// "f32, f16, ..., q6_k, Q4_K_M, Q5_K_M": what parse_quantize_target accepts.
std::string quantize_target_names();

// The type tensor `name` of `shape` (ggml order) gets, as llama.cpp's llama-quantize chooses it:
// tensors of fewer than 2 dimensions are not quantized (F32 here; quantize_model keeps their
// type); with `pure` every other tensor gets the base type; otherwise, for a quantized base of
// fewer bits than Q6_K (all but Q8_0 and F8_E4M3), the classifier (output.weight, or
// token_embd.weight when there is no output.weight) takes Q6_K, and with the _M mixes attn_v and
// ffn_down take Q6_K in the first and last eighths of the layers and every third layer between
// (llama.cpp's use_more_bits); IQ4_NL puts attn_v in Q5_K where `n_gqa` (query heads per KV
// head) is 4 or more, and ffn_down of the first eighth of the layers. A row length the chosen
// type's blocks do not divide falls back as llama.cpp's does (Q4_K to Q5_0, Q5_K to Q5_1, Q6_K
// to Q8_0), then to F16. With an importance matrix (`has_imatrix`), as llama-quantize: IQ4_NL
// leaves the first eighth's ffn_down alone, and Q4_0 / Q5_0 put it in Q4_1 / Q5_1 instead.
GgmlType quantize_type_for(const QuantizeTarget &target, bool pure, const std::string &name, const std::vector<int64_t> &shape,
                           bool has_output, int n_layer, int n_gqa = 1, bool has_imatrix = false);

struct QuantizeProgress {
  int index, count;  // tensor index (0-based) of count
  const GgufTensorInfo *tensor;
  GgmlType to;
  bool weighted;  // quantized with an importance matrix entry
};

struct QuantizeSummary {
  int tensors = 0, quantized = 0, weighted = 0;  // all tensors written; those whose type changed; those of them with an importance entry
  uint64_t bytes_in = 0, bytes_out = 0;
  int64_t elements = 0;
  double seconds = 0;
  double bits_per_weight() const { return elements ? double(bytes_out) * 8 / double(elements) : 0; }
};

struct QuantizeOptions {
  bool pure = false;  // every 2-D tensor in the base type: no Q6_K classifier, no mix rules
  int threads = 0;    // threads sharing each tensor's rows; <= 0: one per CPU. The bytes do not depend on it.
  // Weighs each quantized matrix's rounding error by its columns' importance (quantize_row);
  // a matrix with no entry is quantized without, one whose entry has another column count is
  // an error. Recorded in the output as llama-quantize records it (quantize.imatrix.*), with
  // `imatrix_file` as its name.
  const ImportanceMatrix *imatrix = nullptr;
  std::string imatrix_file;
};

// Reads `in` (memory-mapped; any readable tensor types, usually F32 / F16 / BF16), writes `out`
// (a temporary file renamed into place) with every tensor in the type quantize_type_for gives,
// quantized row by row with quantize_row from the reference dequantizer's values (tensors whose
// type does not change are copied byte for byte), the metadata copied with general.file_type
// and general.quantization_version set. `progress` (if set) is called before each tensor.
QuantizeSummary quantize_model(const std::string &in, const std::string &out, const QuantizeTarget &target,
                               const QuantizeOptions &options = {}, const std::function<void(const QuantizeProgress &)> &progress = {});

}  // namespace kdsl::models
