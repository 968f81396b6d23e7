// rope.h - rotary position embedding in place, in the adjacent-pair and the NeoX half-split forms, at consecutive or given positions
#pragma once
#include "kernels/common.h"

namespace kdsl::kernels {

// The angles of position pos, (cos, sin) * magnitude, and the pair offsets (a, b) in a head,
// for every rotated pair i (mask: i < head_dim / 2).
template <int HALF>
struct RopeAngles {
  Block<i32, HALF> a, b;
  Block<boolean, HALF> mask;
  Block<f32, HALF> c, s;
};
template <int HALF, bool NEOX>
RopeAngles<HALF> rope_angles(Ptr<const f32> inv_freq, Scalar<i32> head_dim, Scalar<i32> pos, Scalar<f32> magnitude) {
  auto i = arange<HALF>();
  auto half = head_dim / 2;
  auto mask = i < half;
  auto angle = cast<f32>(pos) * load(inv_freq + i, mask, 0);
  return {NEOX ? i : i * 2, NEOX ? i + half : i * 2 + 1, mask, cos(angle) * magnitude, sin(angle) * magnitude};
}

template <int HALF>
void rotate_head(Ptr<f32> head, const RopeAngles<HALF> &r) {
  auto xa = load(head + r.a, r.mask, 0);
  auto xb = load(head + r.b, r.mask, 0);
  store(head + r.a, xa * r.c - xb * r.s, r.mask);
  store(head + r.b, xa * r.s + xb * r.c, r.mask);
}

// Rotates token r's query heads and key heads by the angles pos * inv_freq[i] (i < head_dim/2
// <= HALF), computed once per token (rope_angles), in a run-time loop over heads (rotate_head):
//   (x[a], x[b]) <- magnitude * (x[a] cos - x[b] sin, x[a] sin + x[b] cos)
// with (a, b) = (2i, 2i + 1) (llama2.c, GGUF llama) or (i, i + head_dim/2) (NEOX: GPT-NeoX, Qwen).
// inv_freq[i] = theta^(-2i/head_dim) comes from the host, computed in double; magnitude is 1,
// or YaRN's attention scaling (models/arch/rope_scaling.h).
template <int HALF, bool NEOX>
void rotate_token(Ptr<f32> q, Ptr<f32> k, Ptr<const f32> inv_freq, Scalar<i32> n_heads, Scalar<i32> n_kv_heads, Scalar<i32> head_dim,
                  Scalar<i32> r, Scalar<i32> pos, Scalar<f32> magnitude) {
  auto angles = rope_angles<HALF, NEOX>(inv_freq, head_dim, pos, magnitude);
  auto rotate_heads = [&](Ptr<f32> x, Scalar<i32> heads) {
    for_range(0, heads, 1, [&](auto h) { rotate_head<HALF>(x + (r * heads + h) * head_dim, angles); });
  };
  rotate_heads(q, n_heads);
  rotate_heads(k, n_kv_heads);
}

// One program per token r, at position pos0 + r. pos0 is Dynamic (it changes every step: one
// compiled kernel for every position).
template <int HALF, bool NEOX>
void rope(Ptr<f32> q, Ptr<f32> k, Ptr<const f32> inv_freq, Scalar<i32> n_heads, Scalar<i32> n_kv_heads, Scalar<i32> head_dim,
          Dynamic<i32> pos0, Scalar<f32> magnitude) {
  auto r = program_id(0);
  rotate_token<HALF, NEOX>(q, k, inv_freq, n_heads, n_kv_heads, head_dim, r, pos0 + r, magnitude);
}

// One program per token r, at position positions[r]: the nodes of a token tree, where
// siblings share a position (a speculative check of several drafted continuations at once).
template <int HALF, bool NEOX>
void rope_at(Ptr<f32> q, Ptr<f32> k, Ptr<const f32> inv_freq, Ptr<const i32> positions, Scalar<i32> n_heads, Scalar<i32> n_kv_heads,
             Scalar<i32> head_dim, Scalar<f32> magnitude) {
  auto r = program_id(0);
  rotate_token<HALF, NEOX>(q, k, inv_freq, n_heads, n_kv_heads, head_dim, r, load(positions + r), magnitude);
}

// One program per (token r, head h): a GPU's form of rope, q's heads (h < n_heads) and k's
// (the rest) in one launch. rope's serial loop over a token's heads leaves a GPU one program
// per token (one multiprocessor in decode); here every head is a program of its own and the
// angles are recomputed per head. Token r is at position `pos`.
template <int HALF, bool NEOX>
void rotate_one_head(Ptr<f32> q, Ptr<f32> k, Ptr<const f32> inv_freq, Scalar<i32> n_heads, Scalar<i32> n_kv_heads, Scalar<i32> head_dim,
                     Scalar<i32> pos, Scalar<f32> magnitude) {
  auto r = program_id(0);
  auto h = program_id(1);
  auto angles = rope_angles<HALF, NEOX>(inv_freq, head_dim, pos, magnitude);
  if_(
      h < n_heads, [&] { rotate_head<HALF>(q + (r * n_heads + h) * head_dim, angles); },
      [&] { rotate_head<HALF>(k + (r * n_kv_heads + h - n_heads) * head_dim, angles); });
}

// Token r at position pos0 + r (Dynamic, as in rope).
template <int HALF, bool NEOX>
void rope_heads(Ptr<f32> q, Ptr<f32> k, Ptr<const f32> inv_freq, Scalar<i32> n_heads, Scalar<i32> n_kv_heads, Scalar<i32> head_dim,
                Dynamic<i32> pos0, Scalar<f32> magnitude) {
  rotate_one_head<HALF, NEOX>(q, k, inv_freq, n_heads, n_kv_heads, head_dim, pos0 + program_id(0), magnitude);
}

// rope_heads with token r at positions[r] (rope_at's form of it).
template <int HALF, bool NEOX>
void rope_heads_at(Ptr<f32> q, Ptr<f32> k, Ptr<const f32> inv_freq, Ptr<const i32> positions, Scalar<i32> n_heads, Scalar<i32> n_kv_heads,
                   Scalar<i32> head_dim, Scalar<f32> magnitude) {
  rotate_one_head<HALF, NEOX>(q, k, inv_freq, n_heads, n_kv_heads, head_dim, load(positions + program_id(0)), magnitude);
}

}  // namespace kdsl::kernels
