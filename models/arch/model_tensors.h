// model_tensors.h - each architecture's tensor table and the shape-checked lookup of a GGUF's weights
#pragma once
#include <cstdint>
#include <vector>

#include "models/arch/hparams.h"
#include "models/arch/llm_arch.h"

namespace kdsl::models {

class GgufFile;
struct GgufTensorInfo;

// One tensor an architecture uses; `shape` is in GGUF order (contiguous dimension first).
struct TensorSpec {
  TensorName name;
  int layer;  // -1 for whole-model tensors
  std::vector<int64_t> shape;
  bool required;
};

// Every tensor of the architecture `h` describes, whole-model tensors first, then layer by layer.
std::vector<TensorSpec> tensor_specs(const ModelHParams &h);

struct LayerTensors {
  const GgufTensorInfo *attn_norm = nullptr, *attn_q = nullptr, *attn_k = nullptr, *attn_v = nullptr,
                       *attn_output = nullptr;
  const GgufTensorInfo *attn_q_bias = nullptr, *attn_k_bias = nullptr, *attn_v_bias = nullptr;  // qwen2
  const GgufTensorInfo *attn_q_norm = nullptr, *attn_k_norm = nullptr;                          // qwen3
  const GgufTensorInfo *ffn_norm = nullptr, *ffn_gate = nullptr, *ffn_up = nullptr, *ffn_down = nullptr;
};

struct ModelTensors {
  const GgufTensorInfo *token_embd = nullptr;
  const GgufTensorInfo *output_norm = nullptr;
  const GgufTensorInfo *output = nullptr;  // token_embd when the classifier is tied to it
  const GgufTensorInfo *rope_freqs = nullptr;
  bool tied_embeddings = false;
  std::vector<LayerTensors> layers;
};

// Finds every tensor the architecture needs and checks its shape. A missing tensor or a wrong
// shape throws kdsl::Error: "<file>: tensor 'blk.0.attn_q.weight' has wrong shape: expected
// [64, 64], found [64, 32]".
ModelTensors load_tensors(const GgufFile &gguf, const ModelHParams &h);

}  // namespace kdsl::models
