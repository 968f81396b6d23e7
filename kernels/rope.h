// rope.h - rotary position embedding in place, in the adjacent-pair and the NeoX half-split forms
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// One program per token r (position pos0 + r): the angles pos * inv_freq[i] (i < head_dim/2
// <= HALF) are computed once, then a run-time loop rotates each query head and each key head:
//   (x[a], x[b]) <- (x[a] cos - x[b] sin, x[a] sin + x[b] cos)
// with (a, b) = (2i, 2i + 1) (llama2.c, GGUF llama) or (i, i + head_dim/2) (NEOX: GPT-NeoX, Qwen).
// inv_freq[i] = theta^(-2i/head_dim) comes from the host, computed in double; pos0 is Dynamic
// (it changes every step: one compiled kernel for every position). The rotated vectors are
// scaled by `magnitude` (1, or YaRN's attention scaling: models/arch/rope_scaling.h).
template <int HALF, bool NEOX>
void rope(Ptr<f32> q, Ptr<f32> k, Ptr<const f32> inv_freq, Scalar<i32> n_heads, Scalar<i32> n_kv_heads, Scalar<i32> head_dim,
          Dynamic<i32> pos0, Scalar<f32> magnitude) {
  auto r = program_id(0);
  auto i = arange<HALF>();
  auto half = head_dim / 2;
  auto mask = i < half;
  auto angle = cast<f32>(pos0 + r) * load(inv_freq + i, mask, 0);
  auto c = cos(angle) * magnitude;
  auto s = sin(angle) * magnitude;
  auto a = NEOX ? i : i * 2;
  auto b = NEOX ? i + half : i * 2 + 1;
  auto rotate_heads = [&](Ptr<f32> x, Scalar<i32> heads) {
    for_range(0, heads, 1, [&](auto h) {
      auto head = x + (r * heads + h) * head_dim;
      auto xa = load(head + a, mask, 0);
      auto xb = load(head + b, mask, 0);
      store(head + a, xa * c - xb * s, mask);
      store(head + b, xa * s + xb * c, mask);
    });
  };
  rotate_heads(q, n_heads);
  rotate_heads(k, n_kv_heads);
}

}  // namespace kdsl::kernels
