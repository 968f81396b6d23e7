// hparams.h - a model's hyper-parameters, read from GGUF metadata (llama, qwen2, qwen3) or a llama2.c header
#pragma once
#include <cstdint>
#include <string>

#include "models/arch/llm_arch.h"

namespace kdsl::models {

class GgufFile;
class GgufWriter;
struct Llama2cConfig;

// How RoPE pairs dimensions: Normal rotates adjacent pairs (2i, 2i+1) as llama.cpp's llama
// models and llama2.c do; Neox rotates (i, i + n_rot/2) as Qwen does.
enum class RopeType { Normal, Neox };
enum class RopeScaling { None, Linear, Yarn };

struct ModelHParams {
  Arch arch = Arch::Llama;
  int64_t context_length = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_ff = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;    // Q and K head size (attention.key_length, else n_embd / n_head)
  int64_t head_dim_v = 0;  // V head size
  int64_t n_rot = 0;       // dimensions RoPE rotates (rope.dimension_count, else head_dim)
  int64_t n_vocab = 0;
  float rms_eps = 1e-5f;
  float rope_freq_base = 10000.0f;
  RopeType rope_type = RopeType::Normal;
  // Linear and YaRN scaling keep their factor ("none" has factor 1); rope_scaling.h turns them
  // into per-frequency divisors and a magnitude. The YaRN fields are llama.cpp's defaults
  // unless the file sets them: the ramp between beta_fast and beta_slow rotations over the
  // original context, ext_factor the weight of the extrapolated frequencies in that ramp,
  // attn_factor a factor on the magnitude.
  RopeScaling rope_scaling = RopeScaling::None;
  float rope_scaling_factor = 1.0f;
  int64_t rope_original_context = 0;
  float yarn_ext_factor = 1.0f;
  float yarn_attn_factor = 1.0f;
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;

  int64_t n_gqa() const { return n_head / n_head_kv; }
};

// Reads and validates the hyper-parameters of a llama, qwen2 or qwen3 GGUF. A missing,
// inconsistent or absurd value (a count above INT32_MAX, a non-finite or non-positive float,
// a tokenizer larger than the embedding) throws kdsl::Error naming the file and the key.
ModelHParams load_hparams(const GgufFile &gguf);

// Writes `h` as `<arch>.*` metadata (and general.architecture), as llama.cpp's converter does.
void write_hparams(GgufWriter &writer, const ModelHParams &h);

// The same description of a llama2.c checkpoint (RMSNorm eps 1e-5, RoPE theta 10000, adjacent pairs).
ModelHParams hparams_from_llama2c(const Llama2cConfig &config);

}  // namespace kdsl::models
