// llm_arch.cpp - the spelling of every architecture, hyper-parameter key and tensor name
#include "models/arch/llm_arch.h"

#include <fmt/format.h>
#include <kdsl/error.h>

namespace kdsl::models {

std::string_view arch_name(Arch arch) {
  switch (arch) {
    case Arch::Llama: return "llama";
    case Arch::Qwen2: return "qwen2";
    case Arch::Qwen3: return "qwen3";
  }
  return "?";
}

std::optional<Arch> parse_arch(std::string_view name) {
  for (Arch a : {Arch::Llama, Arch::Qwen2, Arch::Qwen3})
    if (arch_name(a) == name) return a;
  return std::nullopt;
}

std::string hparam_key(Arch arch, HParam param) {
  const char *suffix = "";
  switch (param) {
    case HParam::ContextLength: suffix = "context_length"; break;
    case HParam::EmbeddingLength: suffix = "embedding_length"; break;
    case HParam::BlockCount: suffix = "block_count"; break;
    case HParam::FeedForwardLength: suffix = "feed_forward_length"; break;
    case HParam::HeadCount: suffix = "attention.head_count"; break;
    case HParam::HeadCountKv: suffix = "attention.head_count_kv"; break;
    case HParam::KeyLength: suffix = "attention.key_length"; break;
    case HParam::ValueLength: suffix = "attention.value_length"; break;
    case HParam::LayerNormRmsEpsilon: suffix = "attention.layer_norm_rms_epsilon"; break;
    case HParam::RopeFreqBase: suffix = "rope.freq_base"; break;
    case HParam::RopeDimensionCount: suffix = "rope.dimension_count"; break;
    case HParam::RopeScalingType: suffix = "rope.scaling.type"; break;
    case HParam::RopeScalingFactor: suffix = "rope.scaling.factor"; break;
    case HParam::RopeScalingOriginalContext: suffix = "rope.scaling.original_context_length"; break;
    case HParam::RopeScalingYarnExtFactor: suffix = "rope.scaling.yarn_ext_factor"; break;
    case HParam::RopeScalingYarnAttnFactor: suffix = "rope.scaling.yarn_attn_factor"; break;
    case HParam::RopeScalingYarnBetaFast: suffix = "rope.scaling.yarn_beta_fast"; break;
    case HParam::RopeScalingYarnBetaSlow: suffix = "rope.scaling.yarn_beta_slow"; break;
    case HParam::RopeScalingYarnLogMultiplier: suffix = "rope.scaling.yarn_log_multiplier"; break;
    case HParam::VocabSize: suffix = "vocab_size"; break;
  }
  return fmt::format("{}.{}", arch_name(arch), suffix);
}

bool is_per_layer(TensorName t) {
  return !(t == TensorName::TokenEmbd || t == TensorName::OutputNorm || t == TensorName::Output ||
           t == TensorName::RopeFreqs);
}

std::string tensor_name(TensorName t, int layer) {
  const char *base = "";
  switch (t) {
    case TensorName::TokenEmbd: base = "token_embd.weight"; break;
    case TensorName::OutputNorm: base = "output_norm.weight"; break;
    case TensorName::Output: base = "output.weight"; break;
    case TensorName::RopeFreqs: base = "rope_freqs.weight"; break;
    case TensorName::AttnNorm: base = "attn_norm.weight"; break;
    case TensorName::AttnQ: base = "attn_q.weight"; break;
    case TensorName::AttnK: base = "attn_k.weight"; break;
    case TensorName::AttnV: base = "attn_v.weight"; break;
    case TensorName::AttnOutput: base = "attn_output.weight"; break;
    case TensorName::AttnQBias: base = "attn_q.bias"; break;
    case TensorName::AttnKBias: base = "attn_k.bias"; break;
    case TensorName::AttnVBias: base = "attn_v.bias"; break;
    case TensorName::AttnQNorm: base = "attn_q_norm.weight"; break;
    case TensorName::AttnKNorm: base = "attn_k_norm.weight"; break;
    case TensorName::FfnNorm: base = "ffn_norm.weight"; break;
    case TensorName::FfnGate: base = "ffn_gate.weight"; break;
    case TensorName::FfnUp: base = "ffn_up.weight"; break;
    case TensorName::FfnDown: base = "ffn_down.weight"; break;
  }
  if (is_per_layer(t)) {
    if (layer < 0) throw Error(fmt::format("tensor name '{}' needs a layer index", base));
    return fmt::format("blk.{}.{}", layer, base);
  }
  return base;
}

}  // namespace kdsl::models
