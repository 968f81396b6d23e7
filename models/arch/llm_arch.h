// llm_arch.h - the architectures kdsl loads, their hyper-parameter keys and tensor names, in one table (after llama.cpp's llama-arch.h)
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace kdsl::models {

enum class Arch { Llama, Qwen2, Qwen3 };

// Hyper-parameters stored as `<arch>.<key>` in GGUF metadata.
enum class HParam {
  ContextLength,             // context_length
  EmbeddingLength,           // embedding_length
  BlockCount,                // block_count
  FeedForwardLength,         // feed_forward_length
  HeadCount,                 // attention.head_count
  HeadCountKv,               // attention.head_count_kv
  KeyLength,                 // attention.key_length (head size of Q and K)
  ValueLength,               // attention.value_length
  LayerNormRmsEpsilon,       // attention.layer_norm_rms_epsilon
  RopeFreqBase,              // rope.freq_base
  RopeDimensionCount,        // rope.dimension_count
  RopeScalingType,           // rope.scaling.type
  RopeScalingFactor,         // rope.scaling.factor
  RopeScalingOriginalContext,  // rope.scaling.original_context_length
  RopeScalingYarnExtFactor,  // rope.scaling.yarn_ext_factor
  RopeScalingYarnAttnFactor,  // rope.scaling.yarn_attn_factor
  RopeScalingYarnBetaFast,   // rope.scaling.yarn_beta_fast
  RopeScalingYarnBetaSlow,   // rope.scaling.yarn_beta_slow
  RopeScalingYarnLogMultiplier,  // rope.scaling.yarn_log_multiplier (DeepSeek's attention scaling; refused)
  VocabSize,                 // vocab_size
};

enum class TensorName {
  TokenEmbd,   // token_embd.weight
  OutputNorm,  // output_norm.weight
  Output,      // output.weight (absent when tied to the embedding)
  RopeFreqs,   // rope_freqs.weight (Llama 3.1 frequency factors)
  AttnNorm,    // blk.N.attn_norm.weight
  AttnQ,       // blk.N.attn_q.weight
  AttnK,
  AttnV,
  AttnOutput,
  AttnQBias,   // blk.N.attn_q.bias (Qwen2)
  AttnKBias,
  AttnVBias,
  AttnQNorm,   // blk.N.attn_q_norm.weight (Qwen3)
  AttnKNorm,
  FfnNorm,
  FfnGate,
  FfnUp,
  FfnDown,
};

std::string_view arch_name(Arch arch);           // "llama", "qwen2", "qwen3"
std::optional<Arch> parse_arch(std::string_view name);
std::string hparam_key(Arch arch, HParam param);  // "qwen2.attention.head_count_kv"
// "token_embd.weight", or "blk.3.attn_q.weight" for per-layer names (layer >= 0).
std::string tensor_name(TensorName tensor, int layer = -1);
bool is_per_layer(TensorName tensor);

}  // namespace kdsl::models
