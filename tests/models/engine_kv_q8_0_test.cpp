// engine_kv_q8_0_test.cpp - the engine with a q8_0 KV cache: logits against the float64 reference, greedy decoding against the f32 cache's, and the refusal of heads it cannot hold
#include <doctest/doctest.h>

#include <cmath>

#include <kdsl/kdsl.h>

#include "models/engine/engine.h"
#include "models/synth/synth_model.h"
#include "tests/models/logit_error.h"
#include "tests/models/reference_forward.h"
#include "tests/models/shared_models.h"
#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl::models;

namespace {

const kernels::KvTypes kQ8_0{GgmlType::Q8_0, GgmlType::Q8_0};

// A llama model whose heads hold whole blocks of 32 (dim 128, 4 heads over 2 KV heads), and
// qwen3-tiny (head_dim 32 over dim 64, QK norm): the shared trained models' heads (16 and 8)
// are too small for q8_0 (below).
std::string llama_head32() {
  SynthConfig config = synth_preset("tiny");
  config.hparams.n_embd = 128, config.hparams.n_layer = 3;
  std::string path = test::scratch_path("kvq8-llama-head32.gguf");
  write_synthetic_model(config, path);
  return path;
}
std::string qwen3_tiny() {
  std::string path = test::scratch_path("kvq8-qwen3-tiny.gguf");
  write_synthetic_model(synth_preset("qwen3-tiny"), path);
  return path;
}

using kdsl::test::relative_error;

int argmax(std::span<const float> x) { return int(std::max_element(x.begin(), x.end()) - x.begin()); }

// KL(p || q) of the softmaxes of two logit rows, in nats.
double kl_divergence(std::span<const float> p_logits, std::span<const float> q_logits) {
  auto log_softmax = [](std::span<const float> x) {
    double m = *std::max_element(x.begin(), x.end()), total = 0;
    for (float v : x) total += std::exp(double(v) - m);
    std::vector<double> out(x.size());
    for (size_t i = 0; i < x.size(); ++i) out[i] = double(x[i]) - m - std::log(total);
    return out;
  };
  std::vector<double> lp = log_softmax(p_logits), lq = log_softmax(q_logits);
  double kl = 0;
  for (size_t i = 0; i < lp.size(); ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
  return kl;
}

std::vector<int> prompt_of(const ModelWeights &model, int n) {
  std::vector<int> prompt;
  for (int i = 0; i < n; ++i) prompt.push_back((i * 97 + 3) % int(model.hparams.n_vocab));
  return prompt;
}

}  // namespace

TEST_CASE("engine: a q8_0 KV cache gives the reference logits within its quantization, and not exactly") {
  for (const std::string &path : {llama_head32(), qwen3_tiny()}) {
    CAPTURE(path);
    ModelWeights model = load_model_weights(path);
    test::ReferenceForward reference(model);
    const std::vector<int> prompt = prompt_of(model, 11);
    std::vector<double> want;
    for (int p = 0; p < int(prompt.size()); ++p) want = reference.forward(prompt[size_t(p)], p);
    const std::vector<double> want_next = reference.forward(7, int(prompt.size()));
    // Pages of 4 and prefill chunks of 5: the prompt crosses both.
    Engine engine(model, Device::cpu(), EngineOptions{.context = 32, .page_size = 4, .max_batch = 5, .kv_types = kQ8_0});
    // Each cached value is off by at most max|block| / 254, about twice bf16's rounding step
    // (bf16's bound is 2e-2 in engine_synthetic_test); these models' logits come out near 1e-2
    // off, so 3e-2 leaves room for another CPU's rounding, while the f32 cache's error is
    // below 1e-4: a cache that did not quantize fails the second check, one that quantized
    // wrongly (a scale per wrong block, truncated quants) the first.
    double error = relative_error(engine.forward(prompt, 0), want);
    MESSAGE("q8_0 cache, prompt logits: relative error " << error);
    CHECK(error < 3e-2);
    CHECK(error > 1e-4);
    int token[1] = {7};
    CHECK(relative_error(engine.forward(token, int(prompt.size())), want_next) < 3e-2);
  }
}

TEST_CASE("engine: greedy decoding with a q8_0 KV cache follows the f32 cache's") {
  for (const std::string &path : {llama_head32(), qwen3_tiny()}) {
    CAPTURE(path);
    ModelWeights model = load_model_weights(path);
    const std::vector<int> prompt = prompt_of(model, 9);
    const int steps = 48;
    Engine f32(model, Device::cpu(), EngineOptions{.context = 64, .page_size = 16});
    Engine q8(model, Device::cpu(), EngineOptions{.context = 64, .page_size = 16, .kv_types = kQ8_0});
    // The f32 cache's greedy path, with the q8_0 cache fed the same tokens (teacher-forced), so
    // each step compares the two distributions over the same text.
    std::span<const float> a = f32.forward(prompt, 0), b = q8.forward(prompt, 0);
    int pos = int(prompt.size()), agree = 0, first_difference = steps;
    double worst_kl = 0, total_kl = 0;
    for (int i = 0; i < steps; ++i) {
      const double kl = kl_divergence(a, b);
      worst_kl = std::max(worst_kl, kl), total_kl += kl;
      const int next = argmax(a);
      if (argmax(b) == next) ++agree;
      else first_difference = std::min(first_difference, i);
      int token[1] = {next};
      a = f32.forward(token, pos), b = q8.forward(token, pos);
      ++pos;
    }
    MESSAGE("q8_0 vs f32 cache over " << steps << " greedy steps: " << agree << " argmax equal, first difference at step " << first_difference
                                      << ", KL mean " << total_kl / steps << " worst " << worst_kl << " nats");
    // Until the first step whose argmax differs, the q8_0 cache's own greedy run is this path,
    // so first_difference is where free-running greedy decoding would part. These models follow
    // the f32 cache for all 48 steps with KL below 4e-5 nats; the bounds leave room for another
    // CPU's rounding (split-K attention splits by thread count) to flip a near tie.
    CHECK(first_difference >= 16);
    CHECK(agree >= steps - 4);
    CHECK(worst_kl < 2e-4);
    CHECK(total_kl / steps < 5e-5);
  }
}

TEST_CASE("engine: a q8_0 KV cache refuses heads that are not whole blocks of 32, naming the option and head_dim") {
  // The shared trained models: aidreams260K's heads are 16 wide, stories260K's 8.
  for (auto [file, head_dim] : {std::pair<const char *, int>{"aidreams260K.bin", 16}, {"stories260K.bin", 8}}) {
    auto path = test::shared_model(file);
    if (!path) continue;
    ModelWeights model = load_model_weights(*path);
    REQUIRE(model.hparams.head_dim == head_dim);
    std::string text = kdsl_test::error_text([&] { Engine(model, Device::cpu(), EngineOptions{.context = 32, .kv_types = kQ8_0}); });
    CHECK(kdsl_test::contains(text, "--cache-type-k q8_0 --cache-type-v q8_0: the model's head_dim is " + std::to_string(head_dim) +
                                        "; a q8_0 KV cache needs a multiple of 32"));
  }
}

TEST_CASE("engine: a position's KV cache bytes count both sides of every layer in the cache's types") {
  ModelHParams h;
  h.n_layer = 3;
  h.n_head_kv = 2;
  h.head_dim = 64;  // a row of 128 values a side
  CHECK(kv_cache_bytes_per_position(h, {GgmlType::F16, GgmlType::F16}) == 3 * 2 * 128 * 2);
  CHECK(kv_cache_bytes_per_position(h, {GgmlType::F32, GgmlType::F16}) == 3 * (128 * 4 + 128 * 2));
  CHECK(kv_cache_bytes_per_position(h, kQ8_0) == 3 * 2 * (128 / 32) * 34);
}
