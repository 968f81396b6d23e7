// model_tensors.cpp - the llama / qwen2 / qwen3 tensor tables and their shape checks
#include "models/arch/model_tensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <kdsl/error.h>

#include "models/gguf/gguf_file.h"

namespace kdsl::models {

std::vector<TensorSpec> tensor_specs(const ModelHParams &h) {
  const int64_t embd = h.n_embd, q = h.n_head * h.head_dim, k = h.n_head_kv * h.head_dim,
                v = h.n_head_kv * h.head_dim_v, o = h.n_head * h.head_dim_v;
  std::vector<TensorSpec> specs = {
      {TensorName::TokenEmbd, -1, {embd, h.n_vocab}, true},
      {TensorName::OutputNorm, -1, {embd}, true},
      {TensorName::Output, -1, {embd, h.n_vocab}, false},  // absent: tied to token_embd
  };
  if (h.arch == Arch::Llama) specs.push_back({TensorName::RopeFreqs, -1, {h.n_rot / 2}, false});
  for (int l = 0; l < int(h.n_layer); ++l) {
    specs.push_back({TensorName::AttnNorm, l, {embd}, true});
    specs.push_back({TensorName::AttnQ, l, {embd, q}, true});
    specs.push_back({TensorName::AttnK, l, {embd, k}, true});
    specs.push_back({TensorName::AttnV, l, {embd, v}, true});
    specs.push_back({TensorName::AttnOutput, l, {o, embd}, true});
    if (h.arch == Arch::Qwen2) {
      specs.push_back({TensorName::AttnQBias, l, {q}, true});
      specs.push_back({TensorName::AttnKBias, l, {k}, true});
      specs.push_back({TensorName::AttnVBias, l, {v}, true});
    }
    if (h.arch == Arch::Qwen3) {
      specs.push_back({TensorName::AttnQNorm, l, {h.head_dim}, true});
      specs.push_back({TensorName::AttnKNorm, l, {h.head_dim}, true});
    }
    specs.push_back({TensorName::FfnNorm, l, {embd}, true});
    specs.push_back({TensorName::FfnGate, l, {embd, h.n_ff}, true});
    specs.push_back({TensorName::FfnUp, l, {embd, h.n_ff}, true});
    specs.push_back({TensorName::FfnDown, l, {h.n_ff, embd}, true});
  }
  return specs;
}

namespace {

const GgufTensorInfo **slot(ModelTensors &m, const TensorSpec &s) {
  if (s.layer < 0) {
    switch (s.name) {
      case TensorName::TokenEmbd: return &m.token_embd;
      case TensorName::OutputNorm: return &m.output_norm;
      case TensorName::Output: return &m.output;
      default: return &m.rope_freqs;
    }
  }
  LayerTensors &l = m.layers[size_t(s.layer)];
  switch (s.name) {
    case TensorName::AttnNorm: return &l.attn_norm;
    case TensorName::AttnQ: return &l.attn_q;
    case TensorName::AttnK: return &l.attn_k;
    case TensorName::AttnV: return &l.attn_v;
    case TensorName::AttnOutput: return &l.attn_output;
    case TensorName::AttnQBias: return &l.attn_q_bias;
    case TensorName::AttnKBias: return &l.attn_k_bias;
    case TensorName::AttnVBias: return &l.attn_v_bias;
    case TensorName::AttnQNorm: return &l.attn_q_norm;
    case TensorName::AttnKNorm: return &l.attn_k_norm;
    case TensorName::FfnNorm: return &l.ffn_norm;
    case TensorName::FfnGate: return &l.ffn_gate;
    case TensorName::FfnUp: return &l.ffn_up;
    default: return &l.ffn_down;
  }
}

}  // namespace

ModelTensors load_tensors(const GgufFile &f, const ModelHParams &h) {
  // Every layer has tensors of its own, so a block count above the file's tensor count is
  // refused before anything is allocated per layer. (A count a little too high still gets
  // the clearer "tensor 'blk.N....' is missing" below.)
  const int64_t held = int64_t(f.tensors().size());
  if (h.n_layer > held)
    throw Error(fmt::format("{}: metadata '{}' = {}: each layer needs its own tensors, but the file holds only {}",
                            f.path(), hparam_key(h.arch, HParam::BlockCount), h.n_layer, held));
  ModelTensors m;
  m.layers.resize(size_t(h.n_layer));
  for (const TensorSpec &s : tensor_specs(h)) {
    std::string name = tensor_name(s.name, s.layer);
    const GgufTensorInfo *t = f.find_tensor(name);
    if (!t) {
      if (s.required)
        throw Error(fmt::format("{}: tensor '{}' is missing (architecture {}, {} layers)", f.path(), name,
                                arch_name(h.arch), h.n_layer));
      continue;
    }
    if (t->shape != s.shape)
      throw Error(fmt::format("{}: tensor '{}' has wrong shape: expected [{}], found [{}]", f.path(), name,
                              fmt::join(s.shape, ", "), fmt::join(t->shape, ", ")));
    *slot(m, s) = t;
  }
  m.tied_embeddings = m.output == nullptr;
  if (m.tied_embeddings) m.output = m.token_embd;
  return m;
}

}  // namespace kdsl::models
