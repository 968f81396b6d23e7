// hparams.cpp - reads <arch>.* GGUF metadata into ModelHParams and checks that the numbers agree
#include "models/arch/hparams.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include <cmath>
#include <limits>
#include <optional>
#include <tuple>

#include "models/common/printable.h"
#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_writer.h"
#include "models/llama2c/checkpoint.h"

namespace kdsl::models {

namespace {

// The engine holds dimensions and token ids in int, so every count and every product of two
// (the Q, K and V widths) must stay at or below this; larger ones are refused, not wrapped.
constexpr int64_t kMaxDimension = INT32_MAX;

// A float hyper-parameter that must be finite and positive (below `below`, when given), read
// as a double so that an out-of-range value is refused instead of overflowing the float.
float positive_float(const GgufFile &f, const std::string &key, double value, double below = HUGE_VAL) {
  // NaN fails every comparison; the float cast is made only once the value is known to fit.
  if (!(value > 0 && value < below && value <= std::numeric_limits<float>::max() && float(value) > 0))
    throw Error(fmt::format("{}: metadata '{}': expected a finite number above 0{}, found {}", f.path(), key,
                            below < HUGE_VAL ? fmt::format(" and below {}", below) : std::string(), value));
  return float(value);
}

}  // namespace

ModelHParams load_hparams(const GgufFile &f) {
  std::string name = f.get_string("general.architecture");
  auto arch = parse_arch(name);
  if (!arch)
    throw Error(fmt::format("{}: metadata 'general.architecture': '{}' is not supported (supported: llama, qwen2, qwen3)",
                            f.path(), printable(name)));
  ModelHParams h;
  h.arch = *arch;
  auto key = [&](HParam p) { return hparam_key(h.arch, p); };
  auto count = [&](HParam p) {
    int64_t v = f.get_int(key(p));
    if (v <= 0 || v > kMaxDimension)
      throw Error(fmt::format("{}: metadata '{}': expected a positive count up to {}, found {}", f.path(), key(p),
                              kMaxDimension, v));
    return v;
  };
  h.context_length = count(HParam::ContextLength);
  h.n_embd = count(HParam::EmbeddingLength);
  h.n_layer = count(HParam::BlockCount);
  h.n_ff = count(HParam::FeedForwardLength);
  h.n_head = count(HParam::HeadCount);
  h.n_head_kv = f.has(key(HParam::HeadCountKv)) ? count(HParam::HeadCountKv) : h.n_head;
  if (h.n_head % h.n_head_kv != 0)
    throw Error(fmt::format("{}: metadata '{}' = {} is not a multiple of '{}' = {}", f.path(), key(HParam::HeadCount),
                            h.n_head, key(HParam::HeadCountKv), h.n_head_kv));
  if (f.has(key(HParam::KeyLength))) {
    h.head_dim = count(HParam::KeyLength);
  } else {
    if (h.n_embd % h.n_head != 0)
      throw Error(fmt::format("{}: metadata '{}' = {} is not divisible by '{}' = {} (and '{}' is absent)", f.path(),
                              key(HParam::EmbeddingLength), h.n_embd, key(HParam::HeadCount), h.n_head,
                              key(HParam::KeyLength)));
    h.head_dim = h.n_embd / h.n_head;
  }
  h.head_dim_v = f.has(key(HParam::ValueLength)) ? count(HParam::ValueLength) : h.head_dim;
  // Both factors are at most 2^31 - 1, so the products fit in int64 before they are compared.
  for (auto [heads, dim, what] : {std::tuple{h.n_head, h.head_dim, "query"}, std::tuple{h.n_head, h.head_dim_v, "output"}})
    if (heads * dim > kMaxDimension)
      throw Error(fmt::format("{}: metadata '{}' = {} heads of {} dimensions make a {} width of {}, above the {} kdsl "
                              "supports",
                              f.path(), key(HParam::HeadCount), heads, dim, what, heads * dim, kMaxDimension));
  h.n_rot = f.has(key(HParam::RopeDimensionCount)) ? count(HParam::RopeDimensionCount) : h.head_dim;
  if (h.n_rot > h.head_dim || h.n_rot % 2 != 0)
    throw Error(fmt::format("{}: metadata '{}': expected an even number up to the head size {}, found {}", f.path(),
                            key(HParam::RopeDimensionCount), h.head_dim, h.n_rot));

  // The embedding's rows, in order of authority; the tokenizer may be smaller (padding rows,
  // as llama.cpp allows) but never larger, or it could encode ids the model has no row for.
  const GgufTensorInfo *embd = f.find_tensor("token_embd.weight");
  std::optional<int64_t> n_tokens;
  if (f.has("tokenizer.ggml.tokens")) n_tokens = int64_t(f.get_array("tokenizer.ggml.tokens", GgufValueType::String).size());
  if (f.has(key(HParam::VocabSize))) h.n_vocab = count(HParam::VocabSize);
  else if (embd && embd->shape.size() == 2) h.n_vocab = embd->shape[1];
  else if (n_tokens) h.n_vocab = *n_tokens;
  else throw Error(fmt::format("{}: vocabulary size: neither '{}', tokenizer.ggml.tokens nor token_embd.weight gives it",
                               f.path(), key(HParam::VocabSize)));
  if (h.n_vocab <= 0 || h.n_vocab > kMaxDimension)
    throw Error(fmt::format("{}: vocabulary size: expected 1 to {} tokens, found {}", f.path(), kMaxDimension, h.n_vocab));
  if (n_tokens && *n_tokens > h.n_vocab)
    throw Error(fmt::format("{}: metadata 'tokenizer.ggml.tokens' has {} tokens but the model's embedding has {} rows "
                            "('{}' or token_embd.weight): the tokenizer must not be larger than the embedding",
                            f.path(), *n_tokens, h.n_vocab, key(HParam::VocabSize)));

  h.rms_eps = positive_float(f, key(HParam::LayerNormRmsEpsilon), f.get_float(key(HParam::LayerNormRmsEpsilon)), 1.0);
  if (auto base = f.find_float(key(HParam::RopeFreqBase))) h.rope_freq_base = positive_float(f, key(HParam::RopeFreqBase), *base);
  else h.rope_freq_base = h.arch == Arch::Llama ? 10000.0f : 1000000.0f;
  h.rope_type = h.arch == Arch::Llama ? RopeType::Normal : RopeType::Neox;

  std::optional<std::string> type = f.find_string(key(HParam::RopeScalingType));
  std::string scaling = type.value_or("none");
  if (scaling == "none") h.rope_scaling = RopeScaling::None;
  else if (scaling == "linear") h.rope_scaling = RopeScaling::Linear;
  else if (scaling == "yarn") h.rope_scaling = RopeScaling::Yarn;
  else
    throw Error(fmt::format("{}: metadata '{}': expected none, linear or yarn, found '{}'", f.path(),
                            key(HParam::RopeScalingType), printable(scaling)));
  double factor = f.find_float(key(HParam::RopeScalingFactor)).value_or(1.0);
  h.rope_original_context = f.find_int(key(HParam::RopeScalingOriginalContext)).value_or(h.context_length);
  // llama.cpp applies the factor unless the type says none, also when the type is absent (it
  // defaults to linear). rope_scaling.h turns the factor into what the kernels apply.
  if (factor != 1.0 && !type) h.rope_scaling = RopeScaling::Linear;
  h.rope_scaling_factor = h.rope_scaling == RopeScaling::None ? 1.0f : positive_float(f, key(HParam::RopeScalingFactor), factor);
  if (h.rope_scaling == RopeScaling::Yarn) {
    // DeepSeek's log multiplier rescales attention scores as well, which the engine's archs do
    // not: a file that sets it would run with silently wrong attention, so it is refused.
    if (double log_mul = f.find_float(key(HParam::RopeScalingYarnLogMultiplier)).value_or(0.0); log_mul != 0.0)
      throw Error(fmt::format("{}: metadata '{}' = {}: YaRN with an attention log multiplier (DeepSeek's) is not supported; "
                              "expected 0 or absent",
                              f.path(), key(HParam::RopeScalingYarnLogMultiplier), log_mul));
    auto read = [&](HParam p, float fallback, bool zero_ok) {
      std::optional<double> v = f.find_float(key(p));
      if (!v) return fallback;
      if (zero_ok && *v == 0.0) return 0.0f;
      return positive_float(f, key(p), *v);
    };
    h.yarn_ext_factor = read(HParam::RopeScalingYarnExtFactor, 1.0f, true);
    h.yarn_attn_factor = read(HParam::RopeScalingYarnAttnFactor, 1.0f, false);
    h.yarn_beta_fast = read(HParam::RopeScalingYarnBetaFast, 32.0f, false);
    h.yarn_beta_slow = read(HParam::RopeScalingYarnBetaSlow, 1.0f, false);
    if (h.rope_original_context <= 0 || h.rope_original_context > kMaxDimension)
      throw Error(fmt::format("{}: metadata '{}': expected a context length from 1 to {} for YaRN scaling, found {}", f.path(),
                              key(HParam::RopeScalingOriginalContext), kMaxDimension, h.rope_original_context));
  }
  return h;
}

void write_hparams(GgufWriter &w, const ModelHParams &h) {
  auto key = [&](HParam p) { return hparam_key(h.arch, p); };
  auto u32 = [](int64_t v) { return uint32_t(v); };
  w.set("general.architecture", std::string(arch_name(h.arch)));
  w.set(key(HParam::ContextLength), u32(h.context_length));
  w.set(key(HParam::EmbeddingLength), u32(h.n_embd));
  w.set(key(HParam::BlockCount), u32(h.n_layer));
  w.set(key(HParam::FeedForwardLength), u32(h.n_ff));
  w.set(key(HParam::HeadCount), u32(h.n_head));
  w.set(key(HParam::HeadCountKv), u32(h.n_head_kv));
  if (h.head_dim * h.n_head != h.n_embd || h.head_dim_v != h.head_dim) {
    w.set(key(HParam::KeyLength), u32(h.head_dim));
    w.set(key(HParam::ValueLength), u32(h.head_dim_v));
  }
  w.set(key(HParam::RopeDimensionCount), u32(h.n_rot));
  w.set(key(HParam::RopeFreqBase), h.rope_freq_base);
  w.set(key(HParam::LayerNormRmsEpsilon), h.rms_eps);
  w.set(key(HParam::VocabSize), u32(h.n_vocab));
  if (h.rope_scaling != RopeScaling::None) {
    w.set(key(HParam::RopeScalingType), h.rope_scaling == RopeScaling::Linear ? "linear" : "yarn");
    w.set(key(HParam::RopeScalingFactor), h.rope_scaling_factor);
    w.set(key(HParam::RopeScalingOriginalContext), u32(h.rope_original_context));
  }
  if (h.rope_scaling == RopeScaling::Yarn) {
    w.set(key(HParam::RopeScalingYarnExtFactor), h.yarn_ext_factor);
    w.set(key(HParam::RopeScalingYarnAttnFactor), h.yarn_attn_factor);
    w.set(key(HParam::RopeScalingYarnBetaFast), h.yarn_beta_fast);
    w.set(key(HParam::RopeScalingYarnBetaSlow), h.yarn_beta_slow);
  }
}

ModelHParams hparams_from_llama2c(const Llama2cConfig &c) {
  ModelHParams h;
  h.arch = Arch::Llama;
  h.context_length = c.seq_len;
  h.n_embd = c.dim;
  h.n_layer = c.n_layers;
  h.n_ff = c.hidden_dim;
  h.n_head = c.n_heads;
  h.n_head_kv = c.n_kv_heads;
  h.head_dim = h.head_dim_v = h.n_rot = c.head_size();
  h.n_vocab = c.vocab_size;
  return h;
}

}  // namespace kdsl::models
