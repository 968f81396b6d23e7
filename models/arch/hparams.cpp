// hparams.cpp - reads <arch>.* GGUF metadata into ModelHParams and checks that the numbers agree
#include "models/arch/hparams.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_writer.h"
#include "models/llama2c/checkpoint.h"

namespace kdsl::models {

ModelHParams load_hparams(const GgufFile &f) {
  std::string name = f.get_string("general.architecture");
  auto arch = parse_arch(name);
  if (!arch)
    throw Error(fmt::format("{}: metadata 'general.architecture': '{}' is not supported (supported: llama, qwen2, qwen3)",
                            f.path(), name));
  ModelHParams h;
  h.arch = *arch;
  auto key = [&](HParam p) { return hparam_key(h.arch, p); };
  auto count = [&](HParam p) {
    int64_t v = f.get_int(key(p));
    if (v <= 0 || v > (int64_t(1) << 32))
      throw Error(fmt::format("{}: metadata '{}': expected a positive count, found {}", f.path(), key(p), v));
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
  h.n_rot = f.has(key(HParam::RopeDimensionCount)) ? count(HParam::RopeDimensionCount) : h.head_dim;
  if (h.n_rot > h.head_dim || h.n_rot % 2 != 0)
    throw Error(fmt::format("{}: metadata '{}': expected an even number up to the head size {}, found {}", f.path(),
                            key(HParam::RopeDimensionCount), h.head_dim, h.n_rot));

  if (f.has(key(HParam::VocabSize))) h.n_vocab = count(HParam::VocabSize);
  else if (f.has("tokenizer.ggml.tokens")) h.n_vocab = int64_t(f.get_array("tokenizer.ggml.tokens", GgufValueType::String).size());
  else if (const GgufTensorInfo *t = f.find_tensor("token_embd.weight"); t && t->shape.size() == 2) h.n_vocab = t->shape[1];
  else throw Error(fmt::format("{}: vocabulary size: neither '{}', tokenizer.ggml.tokens nor token_embd.weight gives it",
                               f.path(), key(HParam::VocabSize)));

  h.rms_eps = float(f.get_float(key(HParam::LayerNormRmsEpsilon)));
  if (!(h.rms_eps > 0 && h.rms_eps < 1))
    throw Error(fmt::format("{}: metadata '{}': expected a small positive number, found {}", f.path(),
                            key(HParam::LayerNormRmsEpsilon), h.rms_eps));
  h.rope_freq_base = float(f.find_float(key(HParam::RopeFreqBase)).value_or(h.arch == Arch::Llama ? 10000.0 : 1000000.0));
  h.rope_type = h.arch == Arch::Llama ? RopeType::Normal : RopeType::Neox;

  std::string scaling = f.find_string(key(HParam::RopeScalingType)).value_or("none");
  if (scaling == "none") h.rope_scaling = RopeScaling::None;
  else if (scaling == "linear") h.rope_scaling = RopeScaling::Linear;
  else if (scaling == "yarn") h.rope_scaling = RopeScaling::Yarn;
  else
    throw Error(fmt::format("{}: metadata '{}': expected none, linear or yarn, found '{}'", f.path(),
                            key(HParam::RopeScalingType), scaling));
  h.rope_scaling_factor = float(f.find_float(key(HParam::RopeScalingFactor)).value_or(1.0));
  h.rope_original_context = f.find_int(key(HParam::RopeScalingOriginalContext)).value_or(h.context_length);
  if (h.rope_scaling != RopeScaling::None && !(h.rope_scaling_factor > 0))
    throw Error(fmt::format("{}: metadata '{}': expected a positive factor, found {}", f.path(),
                            key(HParam::RopeScalingFactor), h.rope_scaling_factor));
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
