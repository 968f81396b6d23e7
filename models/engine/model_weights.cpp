// model_weights.cpp - llama2.c and GGUF files into the engine's weight views, shape-checked by the loaders
#include "models/engine/model_weights.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>

#include <kdsl/error.h>

#include "models/arch/model_tensors.h"
#include "models/arch/rope_scaling.h"
#include "models/gguf/dequantize.h"
#include "models/gguf/gguf_file.h"
#include "models/llama2c/checkpoint.h"

namespace kdsl::models {
namespace {

Weight matrix_of(const Llama2cCheckpoint &ckpt, const std::string &name) {
  const Llama2cTensor &t = ckpt.tensor(name);
  Weight w;
  w.data = t.data;
  w.type = kernels::WeightType::F32;
  w.cols = t.shape[0];
  w.rows = t.shape.size() > 1 ? t.shape[1] : 1;
  return w;
}

// Llama 3.1's rope_freqs.weight, checked: one positive, finite factor per RoPE frequency.
std::vector<float> rope_freq_factors(const GgufFile &gguf, const GgufTensorInfo *factors, const ModelHParams &h) {
  if (!factors) return {};
  std::vector<float> f(size_t(h.n_rot / 2));
  if (factors->elements() != int64_t(f.size()))
    throw Error(fmt::format("{}: tensor '{}' has {} values, expected one per RoPE frequency ({})", gguf.path(), factors->name,
                            factors->elements(), f.size()));
  dequantize_row(factors->type, factors->data, f.data(), int64_t(f.size()));
  for (size_t i = 0; i < f.size(); ++i)
    if (!(f[i] > 0 && std::isfinite(f[i])))
      throw Error(fmt::format("{}: tensor '{}' value {} is {}; RoPE frequency factors must be positive and finite", gguf.path(),
                              factors->name, i, f[i]));
  return f;
}

Weight weight_of(const GgufFile &gguf, const GgufTensorInfo *t, ModelWeights &out, bool to_f32) {
  if (!t) return {};
  Weight w;
  w.cols = t->shape[0];
  w.rows = 1;
  for (size_t i = 1; i < t->shape.size(); ++i) w.rows *= t->shape[i];
  w.data = t->data;
  if (to_f32) {
    // Norm weights and biases are tiny and read as f32 by the kernels; the reader has already
    // refused any type the reference dequantizer cannot read.
    if (t->type != GgmlType::F32) {
      std::vector<float> values(size_t(w.rows * w.cols));
      dequantize_row(t->type, t->data, values.data(), int64_t(values.size()));
      out.converted.push_back(std::move(values));
      w.data = out.converted.back().data();
    }
    return w;
  }
  std::optional<kernels::WeightType> type = kernel_weight_type(t->type);
  if (!type)
    throw Error(fmt::format("{}: tensor '{}' has type {} ({}); the kdsl engine runs {} weights", gguf.path(), t->name,
                            ggml_type_name(uint32_t(t->type)), uint32_t(t->type),
                            formats::weight_type_names([](const formats::WeightTypeInfo &i) { return i.runs_in_kernels(); }, true)));
  w.type = *type;
  return w;
}

}  // namespace

std::optional<kernels::WeightType> kernel_weight_type(GgmlType t) {
  if (!formats::weight_type_info(t).runs_in_kernels()) return std::nullopt;
  return t;
}

int64_t ModelWeights::bytes_per_token() const {
  int64_t total = output.bytes() + output_norm.bytes();
  for (const LayerWeights &l : layers)
    for (const Weight *w : l.all()) total += w->bytes();
  return total;
}

ModelWeights load_llama2c_weights(const std::string &path) {
  auto ckpt = std::make_shared<Llama2cCheckpoint>(path);
  ModelWeights m;
  m.path = path;
  m.hparams = hparams_from_llama2c(ckpt->config());
  m.token_embd = matrix_of(*ckpt, "token_embd.weight");
  m.output_norm = matrix_of(*ckpt, "output_norm.weight");
  m.output = matrix_of(*ckpt, "output.weight");  // the embedding itself when the classifier is shared
  for (int l = 0; l < ckpt->config().n_layers; ++l) {
    auto name = [&](const char *what) { return fmt::format("blk.{}.{}.weight", l, what); };
    LayerWeights lw;
    lw.attn_norm = matrix_of(*ckpt, name("attn_norm"));
    lw.wq = matrix_of(*ckpt, name("attn_q"));
    lw.wk = matrix_of(*ckpt, name("attn_k"));
    lw.wv = matrix_of(*ckpt, name("attn_v"));
    lw.wo = matrix_of(*ckpt, name("attn_output"));
    lw.ffn_norm = matrix_of(*ckpt, name("ffn_norm"));
    lw.w_gate = matrix_of(*ckpt, name("ffn_gate"));
    lw.w_up = matrix_of(*ckpt, name("ffn_up"));
    lw.w_down = matrix_of(*ckpt, name("ffn_down"));
    m.layers.push_back(lw);
  }
  m.keep_alive = ckpt;
  return m;
}

ModelWeights load_gguf_weights(const std::string &path) {
  auto gguf = std::make_shared<GgufFile>(path);
  ModelWeights m;
  m.path = path;
  m.hparams = load_hparams(*gguf);
  if (m.hparams.n_rot != m.hparams.head_dim)
    throw Error(fmt::format("{}: RoPE over {} of {} head dimensions (partial rotary) is not supported yet", path, m.hparams.n_rot, m.hparams.head_dim));
  if (m.hparams.head_dim_v != m.hparams.head_dim)
    throw Error(fmt::format("{}: value heads of {} dimensions differ from key heads of {}; not supported yet", path, m.hparams.head_dim_v, m.hparams.head_dim));
  ModelTensors t = load_tensors(*gguf, m.hparams);
  m.token_embd = weight_of(*gguf, t.token_embd, m, false);
  m.output_norm = weight_of(*gguf, t.output_norm, m, true);
  m.output = weight_of(*gguf, t.output, m, false);
  m.layers.reserve(t.layers.size());
  // `converted` must not reallocate while views point into it.
  m.converted.reserve(t.layers.size() * 8 + 2);
  for (const LayerTensors &l : t.layers) {
    LayerWeights lw;
    lw.attn_norm = weight_of(*gguf, l.attn_norm, m, true);
    lw.wq = weight_of(*gguf, l.attn_q, m, false);
    lw.wk = weight_of(*gguf, l.attn_k, m, false);
    lw.wv = weight_of(*gguf, l.attn_v, m, false);
    lw.wo = weight_of(*gguf, l.attn_output, m, false);
    lw.bq = weight_of(*gguf, l.attn_q_bias, m, true);
    lw.bk = weight_of(*gguf, l.attn_k_bias, m, true);
    lw.bv = weight_of(*gguf, l.attn_v_bias, m, true);
    lw.q_norm = weight_of(*gguf, l.attn_q_norm, m, true);
    lw.k_norm = weight_of(*gguf, l.attn_k_norm, m, true);
    lw.ffn_norm = weight_of(*gguf, l.ffn_norm, m, true);
    lw.w_gate = weight_of(*gguf, l.ffn_gate, m, false);
    lw.w_up = weight_of(*gguf, l.ffn_up, m, false);
    lw.w_down = weight_of(*gguf, l.ffn_down, m, false);
    m.layers.push_back(lw);
  }
  RopeFrequencies rope = rope_frequencies(m.hparams, rope_freq_factors(*gguf, t.rope_freqs, m.hparams));
  m.rope_freq_divisors = std::move(rope.divisors);
  m.rope_magnitude = rope.magnitude;
  m.keep_alive = gguf;
  m.gguf = gguf;
  return m;
}

ModelWeights load_model_weights(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("cannot open model file '{}': {}", path, std::strerror(errno)));
  char magic[4] = {};
  f.read(magic, 4);
  if (f.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0) return load_gguf_weights(path);
  return load_llama2c_weights(path);
}

}  // namespace kdsl::models
