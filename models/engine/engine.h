// engine.h - the transformer forward pass on kdsl kernels: batched prefill, paged KV cache, decode
#pragma once
#include <span>
#include <vector>

#include <kdsl/device.h>

#include "kernels/library.h"
#include "models/engine/model_weights.h"

namespace kdsl::models {

struct EngineOptions {
  int context = 0;      // tokens of KV cache; 0: the model's context, or what a quarter of free memory holds
  int page_size = 16;   // positions per KV page
  int max_batch = 512;  // prompt tokens per prefill chunk
};

// One sequence on one device. All buffers are allocated up front, so forward() allocates
// nothing; llama, qwen2 (QKV bias) and qwen3 (QK norm) share this code, as llama.cpp's
// graph builders share theirs.
class Engine {
 public:
  Engine(const ModelWeights &model, const Device &device, EngineOptions options = {});

  // Runs `tokens` at positions pos .. pos + n - 1 (a prefill chunk, or one decode token) and
  // returns the logits of the last one. Positions must continue the cached ones.
  std::span<const float> forward(std::span<const int> tokens, int pos);

  int context() const { return context_; }
  const ModelWeights &model() const { return model_; }
  kernels::Library &kernels() { return kernels_; }

 private:
  void layer(int l, int n, int pos);

  const ModelWeights &model_;
  kernels::Library kernels_;
  EngineOptions options_;
  int context_ = 0;
  int dim_ = 0, q_dim_ = 0, kv_dim_ = 0, ff_ = 0, vocab_ = 0;
  // Activations, sized for max_batch rows.
  std::vector<float> x_, xb_, q_, k_, v_, att_, proj_, gate_, up_, logits_;
  std::vector<int32_t> ids_;
  // KV cache: per layer, pages of [page_size][n_kv_heads][head_dim]; one block table.
  std::vector<std::vector<float>> k_pages_, v_pages_;
  std::vector<int32_t> block_table_;
};

}  // namespace kdsl::models
