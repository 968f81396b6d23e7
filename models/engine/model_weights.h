// model_weights.h - a loaded model as the engine sees it: hyper-parameters and typed weight views
#pragma once
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/weight_type.h"
#include "models/arch/hparams.h"
#include "models/gguf/gguf_types.h"

namespace kdsl::models {

class GgufFile;

// A row-major [rows][cols] matrix (or a vector: rows = 1) of f32, f16, bf16, or Q8_0 / Q4_0
// / Q4_K / Q6_K blocks in their GGUF layout (cols a multiple of 32, 256 for the k-quants), in memory the ModelWeights keeps alive
// (a mapped file, or a converted copy). Norms and biases are always f32.
struct Weight {
  const void *data = nullptr;
  kernels::WeightType type = kernels::WeightType::F32;
  int64_t rows = 0, cols = 0;
  // 1: rows as the file stores them; R > 1: grouped by R rows (formats/row_groups.h), as the
  // engine lays out a matrix the CPU's decode reads faster so (Library::row_group). The bytes
  // are as many either way: only multiples of R rows are grouped.
  int row_group = 1;
  // Where `data` is a grouped copy: the matrix as the file stores it, which a prefill's
  // products read instead of putting the rows back (Library::matmul); null otherwise.
  const void *stored = nullptr;

  explicit operator bool() const { return data != nullptr; }
  int64_t bytes() const { return rows * kernels::weight_bytes(type, cols); }
  const float *f32() const { return static_cast<const float *>(data); }
};

struct LayerWeights {
  Weight attn_norm, wq, wk, wv, wo;
  Weight bq, bk, bv;          // qwen2: QKV biases
  Weight q_norm, k_norm;      // qwen3: per-head RMSNorm of q and k
  Weight ffn_norm, w_gate, w_up, w_down;

  // Every weight of the layer, present or not (a missing one is null).
  std::array<Weight *, 14> all() { return {&attn_norm, &wq, &wk, &wv, &wo, &bq, &bk, &bv, &q_norm, &k_norm, &ffn_norm, &w_gate, &w_up, &w_down}; }
  std::array<const Weight *, 14> all() const {
    return {&attn_norm, &wq, &wk, &wv, &wo, &bq, &bk, &bv, &q_norm, &k_norm, &ffn_norm, &w_gate, &w_up, &w_down};
  }
};

struct ModelWeights {
  std::string path;
  ModelHParams hparams;
  Weight token_embd, output_norm, output;
  std::vector<LayerWeights> layers;
  std::shared_ptr<const void> keep_alive;              // the mapped file(s)
  // The parsed GGUF (null for llama2.c), so the tokenizer and chat template are read from
  // this parse rather than a second and third one of the same file.
  std::shared_ptr<const GgufFile> gguf;
  std::vector<std::vector<float>> converted;           // norms and biases converted to f32
  // What RoPE divides each of its head_dim/2 frequencies by and scales the rotated vectors by
  // (models/arch/rope_scaling.h: linear or YaRN scaling, Llama 3.1's rope_freqs.weight);
  // divisors are empty when all are 1.
  std::vector<float> rope_freq_divisors;
  float rope_magnitude = 1.0f;

  // Bytes of weights one decoded token reads (every matrix once, the embedding row aside).
  int64_t bytes_per_token() const;
};

// The kernels' name for a GGUF tensor type the engine's matrix kernels read (the rows of
// weight_types.def with kernels), or nullopt for the others.
std::optional<kernels::WeightType> kernel_weight_type(GgmlType t);

// A llama2.c version-0 checkpoint (float32).
ModelWeights load_llama2c_weights(const std::string &path);

// A llama, qwen2 or qwen3 GGUF with matrices and embeddings of any type the kernels run (F32,
// F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K; read in place: quantized weights
// stay quantized; Q4_K_M files mix Q4_K and Q6_K). Other types are a clear kdsl::Error naming
// the tensor and its type; norms and biases of any readable type are converted
// to f32.
ModelWeights load_gguf_weights(const std::string &path);

// Either, chosen by the file's magic ("GGUF" or not); a missing or unreadable file is a
// kdsl::Error naming it.
ModelWeights load_model_weights(const std::string &path);

}  // namespace kdsl::models
