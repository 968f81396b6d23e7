// reference_model.h - a scalar float32 Llama forward pass over a llama2.c checkpoint, the host reference for kernels
#pragma once
#include <span>
#include <vector>

#include "models/llama2c/checkpoint.h"

namespace kdsl::models {

// llama2.c's run.c, step by step and unoptimized: RMSNorm (eps 1e-5), RoPE on adjacent
// pairs with theta 10000, grouped-query attention, SwiGLU. It exists to check the loader
// (the README's reference ids) and, later, the kernels against a plain host computation.
class ReferenceLlama {
 public:
  explicit ReferenceLlama(const Llama2cCheckpoint &checkpoint);

  // Logits for `token` at position `pos` (0-based); positions must be fed in order.
  std::span<const float> forward(int token, int pos);

 private:
  const Llama2cCheckpoint &ckpt_;
  std::vector<float> x_, xb_, xb2_, hb_, hb2_, q_, att_, logits_;
  std::vector<float> key_cache_, value_cache_;  // [layer][seq_len][kv_dim]
};

}  // namespace kdsl::models
