// reference_model.cpp - llama2.c's forward pass in plain loops, reading tensors by their GGUF-style names
#include "models/llama2c/reference_model.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <kdsl/error.h>

namespace kdsl::models {

namespace {

void rmsnorm(float *out, const float *x, const float *weight, int n) {
  float ss = 0;
  for (int i = 0; i < n; ++i) ss += x[i] * x[i];
  ss = 1.0f / std::sqrt(ss / float(n) + 1e-5f);
  for (int i = 0; i < n; ++i) out[i] = weight[i] * (ss * x[i]);
}

// out[rows] = w[rows][cols] @ x[cols]
void matmul(float *out, const float *x, const float *w, int cols, int rows) {
  for (int r = 0; r < rows; ++r) {
    float acc = 0;
    for (int c = 0; c < cols; ++c) acc += w[size_t(r) * size_t(cols) + size_t(c)] * x[c];
    out[r] = acc;
  }
}

void softmax(float *x, int n) {
  float max = *std::max_element(x, x + n), sum = 0;
  for (int i = 0; i < n; ++i) sum += x[i] = std::exp(x[i] - max);
  for (int i = 0; i < n; ++i) x[i] /= sum;
}

}  // namespace

ReferenceLlama::ReferenceLlama(const Llama2cCheckpoint &checkpoint) : ckpt_(checkpoint) {
  const Llama2cConfig &c = ckpt_.config();
  x_.resize(size_t(c.dim));
  xb_.resize(size_t(c.dim));
  xb2_.resize(size_t(c.dim));
  hb_.resize(size_t(c.hidden_dim));
  hb2_.resize(size_t(c.hidden_dim));
  q_.resize(size_t(c.dim));
  att_.resize(size_t(c.seq_len));
  logits_.resize(size_t(c.vocab_size));
  key_cache_.resize(size_t(c.n_layers) * size_t(c.seq_len) * size_t(c.kv_dim()));
  value_cache_.resize(key_cache_.size());
}

std::span<const float> ReferenceLlama::forward(int token, int pos) {
  const Llama2cConfig &c = ckpt_.config();
  if (token < 0 || token >= c.vocab_size || pos < 0 || pos >= c.seq_len)
    throw Error(fmt::format("{}: token {} at position {} is outside vocab {} / seq_len {}", ckpt_.path(), token,
                            pos, c.vocab_size, c.seq_len));
  const int dim = c.dim, kv_dim = c.kv_dim(), hs = c.head_size(), hidden = c.hidden_dim;
  const int group = c.n_heads / c.n_kv_heads;
  auto w = [&](int layer, const char *name) { return ckpt_.tensor(fmt::format("blk.{}.{}", layer, name)).data; };

  std::copy_n(ckpt_.tensor("token_embd.weight").data + size_t(token) * size_t(dim), dim, x_.begin());
  for (int l = 0; l < c.n_layers; ++l) {
    rmsnorm(xb_.data(), x_.data(), w(l, "attn_norm.weight"), dim);
    size_t cache = (size_t(l) * size_t(c.seq_len) + size_t(pos)) * size_t(kv_dim);
    float *k = key_cache_.data() + cache, *v = value_cache_.data() + cache;
    matmul(q_.data(), xb_.data(), w(l, "attn_q.weight"), dim, dim);
    matmul(k, xb_.data(), w(l, "attn_k.weight"), dim, kv_dim);
    matmul(v, xb_.data(), w(l, "attn_v.weight"), dim, kv_dim);

    for (int i = 0; i < dim; i += 2) {
      float freq = 1.0f / std::pow(10000.0f, float(i % hs) / float(hs));
      float angle = float(pos) * freq, fcr = std::cos(angle), fci = std::sin(angle);
      for (float *vec : {q_.data(), k}) {
        if (vec == k && i >= kv_dim) continue;
        float v0 = vec[i], v1 = vec[i + 1];
        vec[i] = v0 * fcr - v1 * fci;
        vec[i + 1] = v0 * fci + v1 * fcr;
      }
    }

    for (int h = 0; h < c.n_heads; ++h) {
      const float *qh = q_.data() + h * hs;
      size_t kv_offset = size_t(h / group) * size_t(hs);
      for (int t = 0; t <= pos; ++t) {
        const float *kt = key_cache_.data() + (size_t(l) * size_t(c.seq_len) + size_t(t)) * size_t(kv_dim) + kv_offset;
        float score = 0;
        for (int i = 0; i < hs; ++i) score += qh[i] * kt[i];
        att_[size_t(t)] = score / std::sqrt(float(hs));
      }
      softmax(att_.data(), pos + 1);
      float *out = xb_.data() + h * hs;
      std::fill_n(out, hs, 0.0f);
      for (int t = 0; t <= pos; ++t) {
        const float *vt = value_cache_.data() + (size_t(l) * size_t(c.seq_len) + size_t(t)) * size_t(kv_dim) + kv_offset;
        for (int i = 0; i < hs; ++i) out[i] += att_[size_t(t)] * vt[i];
      }
    }
    matmul(xb2_.data(), xb_.data(), w(l, "attn_output.weight"), dim, dim);
    for (int i = 0; i < dim; ++i) x_[size_t(i)] += xb2_[size_t(i)];

    rmsnorm(xb_.data(), x_.data(), w(l, "ffn_norm.weight"), dim);
    matmul(hb_.data(), xb_.data(), w(l, "ffn_gate.weight"), dim, hidden);
    matmul(hb2_.data(), xb_.data(), w(l, "ffn_up.weight"), dim, hidden);
    for (int i = 0; i < hidden; ++i) {
      float g = hb_[size_t(i)];
      hb_[size_t(i)] = g / (1.0f + std::exp(-g)) * hb2_[size_t(i)];
    }
    matmul(xb_.data(), hb_.data(), w(l, "ffn_down.weight"), hidden, dim);
    for (int i = 0; i < dim; ++i) x_[size_t(i)] += xb_[size_t(i)];
  }
  rmsnorm(x_.data(), x_.data(), ckpt_.tensor("output_norm.weight").data, dim);
  matmul(logits_.data(), x_.data(), ckpt_.tensor("output.weight").data, dim, c.vocab_size);
  return logits_;
}

}  // namespace kdsl::models
