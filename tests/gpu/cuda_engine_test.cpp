// cuda_engine_test.cpp - the engine on an NVIDIA GPU against the same engine on the CPU (synthetic llama, qwen3; f32,
// f16, bf16, q8_0, q4_0, q4_k and q6_k weights), and stories260K's and aidreams260K's greedy ids token for token
// against the shared README. Skips, saying "skipped:", without a GPU or the models ($KDSL_SHARED_MODELS_DIR); runs
// but compares nothing on the fake driver.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <kdsl/kdsl.h>

#include "models/engine/engine.h"
#include "models/synth/synth_model.h"
#include "tests/gpu/gpu_test.h"
#include "tests/models/shared_models.h"

namespace {
using namespace kdsl;
using namespace kdsl::models;

using kdsl_test::skip_comparison_on_fake;

std::optional<Device> gpu() { return kdsl_test::open_gpu(); }

// Greedy ids after the prompt: a batched prefill, then one token at a time.
std::vector<int> greedy(Engine &engine, const std::vector<int> &prompt, int count) {
  std::vector<int> out;
  std::span<const float> logits = engine.forward(prompt, 0);
  int pos = int(prompt.size());
  for (int i = 0; i < count; ++i) {
    out.push_back(int(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    if (i + 1 < count) {
      int token[1] = {out.back()};
      logits = engine.forward(token, pos++);
    }
  }
  return out;
}

double relative_error(std::span<const float> got, std::span<const float> want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) num += std::pow(double(got[i]) - want[i], 2), den += std::pow(double(want[i]), 2);
  return std::sqrt(num / std::max(den, 1e-30));
}

// A 20-token prompt crossing KV pages, then 6 decode steps: GPU logits within `tolerance` of
// the CPU's. Both accumulate in f32, in different orders and with different exp/rsqrt
// implementations: 1e-3. The CPU takes its f32 path for quantized weights too: its
// integer-dot kernels round the activations to 8 bits (0.6-1.7% of the largest logit,
// tests/models/engine_synthetic_test.cpp), which the GPU does not. A GPU's prefill over f16 or
// bf16 weights rounds the activations to that type for the tensor cores (matmul_narrow.h),
// and decode attends to keys and values made so: the bound is wider there (the largest error
// seen is printed).
// kv: the KV cache's type on both; an f16 or bf16 cache's prefill attention on the GPU rounds q
// and P to it for the tensor cores (attention_prefill.h), so the bound is its rounding's.
void check_engine_matches_cpu(const Device &device, SynthConfig config, const std::string &name, kernels::KvTypes kv = {}) {
  std::string path = test::scratch_path(name);
  write_synthetic_model(config, path);
  ModelWeights model = load_model_weights(path);
  EngineOptions o{.context = 64, .page_size = 16, .kv_types = kv};
  EngineOptions f32_path = o;
  f32_path.integer_dot_rows = 0;
  Engine on_gpu(model, device, o), on_cpu(model, Device::cpu(), f32_path);
  std::vector<int> prompt;
  for (int i = 0; i < 20; ++i) prompt.push_back(1 + (i * 37) % (int(model.hparams.n_vocab) - 1));
  std::span<const float> first = on_cpu.forward(prompt, 0);
  std::vector<float> want(first.begin(), first.end());
  if (kdsl_test::is_fake(device)) {  // runs every kernel of the forward pass; compares nothing
    on_gpu.forward(prompt, 0);
    return;
  }
  const GgmlType t = config.weight_type;
  const double tolerance = t == GgmlType::BF16 || kv.k == kernels::WeightType::BF16 ? 1e-2
                           : t == GgmlType::F16 || kv.k == kernels::WeightType::F16  ? 2e-3
                                                                                       : 1e-3;
  double worst = relative_error(on_gpu.forward(prompt, 0), want);
  CHECK(worst < tolerance);
  int token[1] = {7};
  for (int p = int(prompt.size()); p < int(prompt.size()) + 6; ++p) {
    std::span<const float> cpu_logits = on_cpu.forward(token, p);
    want.assign(cpu_logits.begin(), cpu_logits.end());
    INFO(name, " decode position ", p);
    double e = relative_error(on_gpu.forward(token, p), want);
    CHECK(e < tolerance);
    worst = std::max(worst, e);
  }
  MESSAGE(name, " (", ggml_type_name(t), " weights): the largest relative error of the logits against the CPU's is ", worst, " (bound ", tolerance, ")");
}

TEST_CASE("gpu engine: synthetic llama and qwen3 logits match the CPU engine, f32 / f16 / bf16 / q8_0 / q4_0 / q4_k / q6_k weights") {
  auto device = gpu();
  if (!device) return;
  skip_comparison_on_fake(*device);
  for (GgmlType t : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0}) {
    SynthConfig c = synth_preset("tiny");
    c.weight_type = c.embedding_type = t;
    check_engine_matches_cpu(*device, c, "gpu-engine-llama.gguf");
  }
  // Q4_K_M's mix: Q4_K matrices, a Q6_K token table and classifier; rows of whole 256-element
  // super-blocks.
  SynthConfig k = synth_preset("tiny");
  k.hparams.n_embd = k.hparams.n_ff = 256;
  k.weight_type = GgmlType::Q4_K;
  k.embedding_type = GgmlType::Q6_K;
  check_engine_matches_cpu(*device, k, "gpu-engine-llama-q4_k_m.gguf");
  check_engine_matches_cpu(*device, synth_preset("qwen3-tiny"), "gpu-engine-qwen3.gguf");
}

TEST_CASE("gpu engine: f16 and bf16 KV caches (prefill attention on tensor cores) give the CPU engine's logits within their rounding") {
  auto device = gpu();
  if (!device) return;
  skip_comparison_on_fake(*device);
  for (kernels::WeightType t : {kernels::WeightType::F16, kernels::WeightType::BF16}) {
    check_engine_matches_cpu(*device, synth_preset("tiny"), "gpu-engine-kv16.gguf", {t, t});
  }
}

TEST_CASE("gpu engine: stories260K greedy ids from BOS reproduce the shared README's reference") {
  auto device = gpu();
  auto path = test::shared_model("stories260K.bin");
  auto readme = test::shared_model("README.md");
  if (!device || !path || !readme) return;
  std::vector<int> want = test::stories_reference(*readme);
  REQUIRE(want.size() == 64);
  ModelWeights model = load_model_weights(*path);
  Engine engine(model, *device, EngineOptions{.context = 256, .page_size = 8});
  std::vector<int> got = greedy(engine, {1}, int(want.size()));  // from BOS
  if (skip_comparison_on_fake(*device)) return;
  CHECK(got == want);
}

TEST_CASE("gpu engine: aidreams260K greedy ids after each prompt reproduce the shared README's reference, token for token") {
  auto device = gpu();
  auto path = test::shared_model("aidreams260K.bin");
  auto readme = test::shared_model("README.md");
  if (!device || !path || !readme) return;
  ModelWeights model = load_model_weights(*path);
  Engine engine(model, *device, EngineOptions{.context = 128, .page_size = 16});
  for (std::string prompt : {"I dreamed", "The river"}) {
    CAPTURE(prompt);
    auto [prompt_ids, next] = test::reference_ids(*readme, prompt);
    // NEXT = the forced prompt tokens after the first, then the generated ones.
    std::vector<int> want(next.begin() + long(prompt_ids.size()) - 1, next.end());
    std::vector<int> got = greedy(engine, prompt_ids, int(want.size()));
    if (skip_comparison_on_fake(*device)) return;
    CHECK(got == want);
  }
}

}  // namespace
