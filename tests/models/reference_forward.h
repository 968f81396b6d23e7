// reference_forward.h - an independent float64 transformer forward pass (llama, qwen2, qwen3) for checking the engine
#pragma once
#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <vector>

#include "models/arch/llm_arch.h"
#include "models/engine/model_weights.h"
#include "models/gguf/dequantize.h"

namespace kdsl::test {

// Plain loops in double precision, one token at a time, with a contiguous KV cache: nothing
// shared with the kernels but the weights. Covers grouped-query attention, both RoPE forms,
// QKV bias (qwen2) and per-head QK RMSNorm (qwen3).
class ReferenceForward {
 public:
  explicit ReferenceForward(const models::ModelWeights &m) : m_(m), h_(m.hparams) {
    k_cache_.assign(m.layers.size(), {});
    v_cache_.assign(m.layers.size(), {});
  }

  // Shown each weight product's input, as Engine::observe_inputs shows the engine's (layer -1:
  // the classifier); null: nothing is shown.
  std::function<void(models::TensorName, int layer, const std::vector<double> &input)> observe;

  std::vector<double> forward(int token, int pos) {
    const int64_t dim = h_.n_embd, hd = h_.head_dim, nh = h_.n_head, nkv = h_.n_head_kv;
    std::vector<double> x = row(m_.token_embd, token);
    for (size_t l = 0; l < m_.layers.size(); ++l) {
      const models::LayerWeights &w = m_.layers[l];
      std::vector<double> xb = rmsnorm(x, w.attn_norm);
      show({models::TensorName::AttnQ, models::TensorName::AttnK, models::TensorName::AttnV}, int(l), xb);
      std::vector<double> q = matvec(w.wq, xb, w.bq), k = matvec(w.wk, xb, w.bk), v = matvec(w.wv, xb, w.bv);
      if (w.q_norm) per_head_norm(q, w.q_norm, nh);
      if (w.k_norm) per_head_norm(k, w.k_norm, nkv);
      rope(q, nh, pos);
      rope(k, nkv, pos);
      k_cache_[l].insert(k_cache_[l].end(), k.begin(), k.end());
      v_cache_[l].insert(v_cache_[l].end(), v.begin(), v.end());
      std::vector<double> att(size_t(nh * hd), 0.0);
      for (int64_t head = 0; head < nh; ++head) {
        int64_t kvh = head / (nh / nkv);
        std::vector<double> scores(size_t(pos + 1));
        double mx = -1e300;
        for (int t = 0; t <= pos; ++t) {
          double s = 0;
          for (int64_t i = 0; i < hd; ++i) s += q[size_t(head * hd + i)] * k_cache_[l][size_t((t * nkv + kvh) * hd + i)];
          scores[size_t(t)] = s / std::sqrt(double(hd));
          mx = std::max(mx, scores[size_t(t)]);
        }
        double total = 0;
        for (double &s : scores) total += (s = std::exp(s - mx));
        for (int t = 0; t <= pos; ++t)
          for (int64_t i = 0; i < hd; ++i) att[size_t(head * hd + i)] += scores[size_t(t)] / total * v_cache_[l][size_t((t * nkv + kvh) * hd + i)];
      }
      show({models::TensorName::AttnOutput}, int(l), att);
      std::vector<double> o = matvec(w.wo, att, {});
      for (int64_t i = 0; i < dim; ++i) x[size_t(i)] += o[size_t(i)];
      xb = rmsnorm(x, w.ffn_norm);
      show({models::TensorName::FfnGate, models::TensorName::FfnUp}, int(l), xb);
      std::vector<double> g = matvec(w.w_gate, xb, {}), u = matvec(w.w_up, xb, {});
      for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
      show({models::TensorName::FfnDown}, int(l), g);
      std::vector<double> d = matvec(w.w_down, g, {});
      for (int64_t i = 0; i < dim; ++i) x[size_t(i)] += d[size_t(i)];
    }
    std::vector<double> final_norm = rmsnorm(x, m_.output_norm);
    show({models::TensorName::Output}, -1, final_norm);
    return matvec(m_.output, final_norm, {});
  }

 private:
  void show(std::initializer_list<models::TensorName> weights, int layer, const std::vector<double> &input) const {
    if (observe)
      for (models::TensorName t : weights) observe(t, layer, input);
  }
  // Norms and biases are f32 (the loader converts them); matrices and embeddings may be any
  // WeightType, read here through the reference dequantizer one row at a time.
  static std::vector<double> row(const models::Weight &w, int64_t r) {
    std::vector<float> values(size_t(w.cols));
    const auto *bytes = static_cast<const uint8_t *>(w.data) + kernels::weight_bytes(w.type, r * w.cols);
    models::dequantize_row(w.type, bytes, values.data(), w.cols);
    return std::vector<double>(values.begin(), values.end());
  }
  static std::vector<double> matvec(const models::Weight &w, const std::vector<double> &x, const models::Weight &bias) {
    std::vector<double> out(size_t(w.rows));
    for (int64_t r = 0; r < w.rows; ++r) {
      std::vector<double> wr = row(w, r);
      double s = bias ? bias.f32()[r] : 0.0;
      for (int64_t c = 0; c < w.cols; ++c) s += wr[size_t(c)] * x[size_t(c)];
      out[size_t(r)] = s;
    }
    return out;
  }
  std::vector<double> rmsnorm(const std::vector<double> &x, const models::Weight &w) const {
    double ss = 0;
    for (double v : x) ss += v * v;
    double scale = 1 / std::sqrt(ss / double(x.size()) + h_.rms_eps);
    std::vector<double> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] * scale * w.f32()[i];
    return out;
  }
  void per_head_norm(std::vector<double> &v, const models::Weight &w, int64_t heads) const {
    int64_t hd = h_.head_dim;
    for (int64_t head = 0; head < heads; ++head) {
      std::vector<double> part(v.begin() + head * hd, v.begin() + (head + 1) * hd);
      part = rmsnorm(part, w);
      std::copy(part.begin(), part.end(), v.begin() + head * hd);
    }
  }
  void rope(std::vector<double> &v, int64_t heads, int pos) const {
    int64_t hd = h_.head_dim;
    bool neox = h_.rope_type == models::RopeType::Neox;
    for (int64_t head = 0; head < heads; ++head)
      for (int64_t i = 0; i < hd / 2; ++i) {
        auto [angle, magnitude] = rope_angle(i, pos);
        int64_t a = head * hd + (neox ? i : 2 * i), b = head * hd + (neox ? i + hd / 2 : 2 * i + 1);
        double x0 = v[size_t(a)], x1 = v[size_t(b)];
        v[size_t(a)] = magnitude * (x0 * std::cos(angle) - x1 * std::sin(angle));
        v[size_t(b)] = magnitude * (x0 * std::sin(angle) + x1 * std::cos(angle));
      }
  }
  // Pair i's angle at `pos` and the magnitude. YaRN is computed here as llama.cpp's rope_yarn
  // states it (a blend of the interpolated and the extrapolated angle), independently of the
  // divisors the engine gets from models/arch/rope_scaling.cpp; linear scaling and Llama 3.1's
  // frequency factors are plain divisions and come from the model.
  std::pair<double, double> rope_angle(int64_t i, int pos) const {
    double n_rot = double(h_.head_dim), theta = h_.rope_freq_base;
    double extrapolated = pos * std::pow(theta, -2.0 * double(i) / n_rot);
    if (h_.rope_scaling != models::RopeScaling::Yarn || h_.rope_scaling_factor == 1.0f) {
      if (!m_.rope_freq_divisors.empty()) extrapolated /= double(m_.rope_freq_divisors[size_t(i)]);
      return {extrapolated, 1.0};
    }
    double freq_scale = 1.0 / h_.rope_scaling_factor, context = double(h_.rope_original_context);
    auto corr = [&](double rotations) { return n_rot * std::log(context / (rotations * 2 * std::numbers::pi)) / (2 * std::log(theta)); };
    double low = std::max(0.0, std::floor(corr(h_.yarn_beta_fast))), high = std::min(n_rot - 1, std::ceil(corr(h_.yarn_beta_slow)));
    double y = (double(i) - low) / std::max(0.001, high - low);
    double ramp_mix = (1 - std::min(1.0, std::max(0.0, y))) * h_.yarn_ext_factor;
    double interpolated = freq_scale * extrapolated;
    double angle = interpolated * (1 - ramp_mix) + extrapolated * ramp_mix;
    double magnitude = h_.yarn_ext_factor != 0 ? h_.yarn_attn_factor * (1 + 0.1 * std::log(1 / freq_scale)) : 1.0;
    return {angle, magnitude};
  }

  const models::ModelWeights &m_;
  const models::ModelHParams &h_;
  std::vector<std::vector<double>> k_cache_, v_cache_;  // [layer][pos][kv_heads][head_dim]
};

}  // namespace kdsl::test
