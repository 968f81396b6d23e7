// arch_test.cpp - hyper-parameters and shape-checked tensors of llama, qwen2 and qwen3 GGUFs, on synthetic models
#include <doctest/doctest.h>

#include <kdsl/error.h>

#include <cmath>
#include <fmt/format.h>
#include <functional>
#include <limits>

#include "models/arch/hparams.h"
#include "models/arch/model_tensors.h"
#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_writer.h"
#include "models/llama2c/checkpoint.h"
#include "models/synth/synth_model.h"
#include "shared_models.h"

using namespace kdsl::models;

namespace {

GgufFile synth(const SynthConfig &c, const std::function<void(GgufWriter &)> &edit = nullptr) {
  GgufWriter w;
  add_synthetic_model(w, c);
  if (edit) edit(w);
  return GgufFile::from_bytes(w.to_bytes(), "synth.gguf");
}

std::string load_error(const GgufFile &f) {
  try {
    load_tensors(f, load_hparams(f));
  } catch (const kdsl::Error &e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("arch: llama hyper-parameters and tensors") {
  GgufFile f = synth(synth_preset("tiny"));
  ModelHParams h = load_hparams(f);
  CHECK(h.arch == Arch::Llama);
  CHECK(h.n_embd == 64);
  CHECK(h.n_layer == 2);
  CHECK(h.n_head == 4);
  CHECK(h.n_head_kv == 2);
  CHECK(h.n_gqa() == 2);
  CHECK(h.head_dim == 16);
  CHECK(h.n_rot == 16);
  CHECK(h.n_ff == 128);
  CHECK(h.n_vocab == 512);
  CHECK(h.context_length == 2048);
  CHECK(h.rms_eps == doctest::Approx(1e-5));
  CHECK(h.rope_freq_base == 10000.0f);
  CHECK(h.rope_type == RopeType::Normal);
  ModelTensors t = load_tensors(f, h);
  CHECK_FALSE(t.tied_embeddings);
  CHECK(t.output->name == "output.weight");
  CHECK(t.layers.size() == 2);
  CHECK(t.layers[1].attn_k->shape == std::vector<int64_t>{64, 32});
  CHECK(t.layers[1].ffn_down->shape == std::vector<int64_t>{128, 64});
  CHECK(t.layers[0].attn_q_bias == nullptr);
  CHECK(t.rope_freqs == nullptr);
}

TEST_CASE("arch: qwen2 has QKV biases, qwen3 has Q/K norms and a head size of its own") {
  SynthConfig q2 = synth_preset("tiny");
  q2.hparams.arch = Arch::Qwen2;
  GgufFile f2 = synth(q2);
  ModelHParams h2 = load_hparams(f2);
  CHECK(h2.rope_type == RopeType::Neox);
  ModelTensors t2 = load_tensors(f2, h2);
  REQUIRE(t2.layers[0].attn_v_bias != nullptr);
  CHECK(t2.layers[0].attn_v_bias->shape == std::vector<int64_t>{32});
  CHECK(f2.get_string("tokenizer.ggml.model") == "gpt2");

  GgufFile f3 = synth(synth_preset("qwen3-tiny"));
  ModelHParams h3 = load_hparams(f3);
  CHECK(h3.arch == Arch::Qwen3);
  CHECK(h3.head_dim == 32);  // attention.key_length, not 64 / 4
  CHECK(h3.rope_freq_base == 1000000.0f);
  ModelTensors t3 = load_tensors(f3, h3);
  CHECK(t3.tied_embeddings);
  CHECK(t3.output == t3.token_embd);
  CHECK(t3.layers[1].attn_q->shape == std::vector<int64_t>{64, 128});
  CHECK(t3.layers[1].attn_output->shape == std::vector<int64_t>{128, 64});
  CHECK(t3.layers[1].attn_k_norm->shape == std::vector<int64_t>{32});
}

TEST_CASE("arch: shape and metadata errors say expected against found") {
  CHECK(load_error(synth(synth_preset("tiny"), [](GgufWriter &w) { w.set("llama.feed_forward_length", uint32_t(100)); })) ==
        "synth.gguf: tensor 'blk.0.ffn_gate.weight' has wrong shape: expected [64, 100], found [64, 128]");
  CHECK(load_error(synth(synth_preset("tiny"), [](GgufWriter &w) {
          w.set("general.architecture", "qwen2");
          for (const char *k : {"context_length", "embedding_length", "block_count", "feed_forward_length",
                                "attention.head_count", "attention.head_count_kv", "attention.layer_norm_rms_epsilon"})
            w.set(std::string("qwen2.") + k, GgufValue(uint32_t(0)));
        })).find("metadata 'qwen2.context_length': expected a positive count up to 2147483647, found 0") != std::string::npos);
  SynthConfig q2 = synth_preset("tiny");
  CHECK(load_error(synth(q2, [](GgufWriter &w) {
          w.set("general.architecture", "qwen2");
          w.set("qwen2.context_length", uint32_t(64));
          w.set("qwen2.embedding_length", uint32_t(64));
          w.set("qwen2.block_count", uint32_t(2));
          w.set("qwen2.feed_forward_length", uint32_t(128));
          w.set("qwen2.attention.head_count", uint32_t(4));
          w.set("qwen2.attention.head_count_kv", uint32_t(2));
          w.set("qwen2.attention.layer_norm_rms_epsilon", 1e-6f);
        })) == "synth.gguf: tensor 'blk.0.attn_q.bias' is missing (architecture qwen2, 2 layers)");
  CHECK(load_error(synth(synth_preset("tiny"), [](GgufWriter &w) { w.set("general.architecture", "gpt2"); })) ==
        "synth.gguf: metadata 'general.architecture': 'gpt2' is not supported (supported: llama, qwen2, qwen3)");
  CHECK(load_error(synth(synth_preset("tiny"), [](GgufWriter &w) { w.set("llama.attention.head_count_kv", uint32_t(3)); })) ==
        "synth.gguf: metadata 'llama.attention.head_count' = 4 is not a multiple of 'llama.attention.head_count_kv' = 3");
  CHECK(load_error(synth(synth_preset("tiny"), [](GgufWriter &w) { w.set("llama.rope.scaling.type", "ntk"); }))
            .find("'llama.rope.scaling.type': expected none, linear or yarn, found 'ntk'") != std::string::npos);
}

TEST_CASE("arch: hyper-parameters survive write_hparams and load_hparams") {
  ModelHParams h;
  h.arch = Arch::Qwen3, h.context_length = 4096, h.n_embd = 96, h.n_layer = 3, h.n_ff = 200, h.n_head = 6;
  h.n_head_kv = 2, h.head_dim = h.head_dim_v = 32, h.n_rot = 32, h.n_vocab = 1000, h.rms_eps = 1e-6f;
  h.rope_freq_base = 5e5f, h.rope_scaling = RopeScaling::Yarn, h.rope_scaling_factor = 4, h.rope_original_context = 1024;
  h.yarn_ext_factor = 0.5f, h.yarn_attn_factor = 0.75f, h.yarn_beta_fast = 24, h.yarn_beta_slow = 2;
  GgufWriter w;
  write_hparams(w, h);
  ModelHParams r = load_hparams(GgufFile::from_bytes(w.to_bytes(), "h.gguf"));
  CHECK(r.head_dim == 32);
  CHECK(r.n_head_kv == 2);
  CHECK(r.n_vocab == 1000);
  CHECK(r.rope_scaling == RopeScaling::Yarn);
  CHECK(r.rope_scaling_factor == 4.0f);
  CHECK(r.rope_original_context == 1024);
  CHECK(r.yarn_ext_factor == 0.5f);
  CHECK(r.yarn_attn_factor == 0.75f);
  CHECK(r.yarn_beta_fast == 24.0f);
  CHECK(r.yarn_beta_slow == 2.0f);
  CHECK(r.rope_freq_base == 5e5f);
}

TEST_CASE("arch: a llama2.c header describes the same hyper-parameters") {
  auto path = kdsl::test::shared_model("stories260K.bin");
  if (!path) return;
  ModelHParams h = hparams_from_llama2c(Llama2cCheckpoint(*path).config());
  CHECK(h.n_head_kv == 4);
  CHECK(h.head_dim == 8);
  CHECK(h.n_vocab == 512);
  CHECK(h.context_length == 512);
}

TEST_CASE("arch: a file-derived architecture name is escaped, never echoed raw to the terminal") {
  std::string err = load_error(synth(synth_preset("tiny"), [](GgufWriter &w) {
    w.set("general.architecture", "\x1b]0;pwned\x07\x1b[2J");
  }));
  CHECK(err == "synth.gguf: metadata 'general.architecture': '\\x1b]0;pwned\\x07\\x1b[2J' is not supported "
               "(supported: llama, qwen2, qwen3)");
  CHECK(err.find('\x1b') == std::string::npos);
}

TEST_CASE("arch: absurd counts are refused before anything is allocated per layer or wraps") {
  // 10^8 layers in a file of 21 tensors: refused at once, not 9 * 10^8 tensor specs later.
  CHECK(load_error(synth(synth_preset("tiny"), [](GgufWriter &w) { w.set("llama.block_count", uint32_t(100000000)); }))
            .find("metadata 'llama.block_count' = 100000000: each layer needs its own tensors, but the file holds only") !=
        std::string::npos);
  CHECK(load_error(synth(synth_preset("tiny"), [](GgufWriter &w) { w.set("llama.attention.head_count", uint64_t(1) << 32); }))
            .find("metadata 'llama.attention.head_count': expected a positive count up to 2147483647, found 4294967296") !=
        std::string::npos);
  // 65536 heads of 65536 dimensions: the width 2^32 used to be computed in int and wrap.
  CHECK(load_error(synth(synth_preset("tiny"), [](GgufWriter &w) {
          w.set("llama.attention.head_count", uint32_t(65536));
          w.set("llama.attention.head_count_kv", uint32_t(65536));
          w.set("llama.attention.key_length", uint32_t(65536));
        })) == "synth.gguf: metadata 'llama.attention.head_count' = 65536 heads of 65536 dimensions make a query width "
               "of 4294967296, above the 2147483647 kdsl supports");
}

TEST_CASE("arch: float hyper-parameters must be finite and positive") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (float bad : {nan, -1.0f, 0.0f, inf}) {
    std::string err = load_error(synth(synth_preset("tiny"), [&](GgufWriter &w) { w.set("llama.rope.freq_base", bad); }));
    CHECK(err == fmt::format("synth.gguf: metadata 'llama.rope.freq_base': expected a finite number above 0, found {}",
                             double(bad)));
    err = load_error(synth(synth_preset("tiny"), [&](GgufWriter &w) { w.set("llama.attention.layer_norm_rms_epsilon", bad); }));
    CHECK(err == fmt::format("synth.gguf: metadata 'llama.attention.layer_norm_rms_epsilon': expected a finite number "
                             "above 0 and below 1, found {}",
                             double(bad)));
  }
  // A double beyond float's range is refused, not converted (an overflowing conversion is undefined).
  CHECK(load_error(synth(synth_preset("tiny"), [](GgufWriter &w) { w.set("llama.rope.freq_base", 1e300); }))
            .find("'llama.rope.freq_base': expected a finite number above 0, found 1e+300") != std::string::npos);
  CHECK(load_error(synth(synth_preset("tiny"), [](GgufWriter &w) { w.set("llama.rope.freq_base", 5e5); })) == "no error");
}

TEST_CASE("arch: linear RoPE scaling loads with its factor; YaRN is refused until the kernels apply it; factor 1 and type none load") {
  auto with = [](const char *type, float factor) {
    return load_error(synth(synth_preset("tiny"), [&](GgufWriter &w) {
      if (type) w.set("llama.rope.scaling.type", type);
      w.set("llama.rope.scaling.factor", factor);
    }));
  };
  auto hparams = [](const char *type, float factor) {
    return load_hparams(synth(synth_preset("tiny"), [&](GgufWriter &w) {
      if (type) w.set("llama.rope.scaling.type", type);
      w.set("llama.rope.scaling.factor", factor);
    }));
  };
  CHECK(with("linear", 4) == "no error");
  CHECK(hparams("linear", 4).rope_scaling == RopeScaling::Linear);
  CHECK(hparams("linear", 4).rope_scaling_factor == 4.0f);
  CHECK(hparams(nullptr, 2).rope_scaling == RopeScaling::Linear);  // llama.cpp's default type
  CHECK(hparams(nullptr, 2).rope_scaling_factor == 2.0f);
  CHECK(with("yarn", 8) == "no error");
  CHECK(hparams("yarn", 8).rope_scaling_factor == 8.0f);
  CHECK(hparams("yarn", 8).yarn_beta_fast == 32.0f);  // llama.cpp's defaults
  CHECK(hparams("yarn", 8).yarn_beta_slow == 1.0f);
  CHECK(hparams("yarn", 8).yarn_ext_factor == 1.0f);
  CHECK(load_error(synth(synth_preset("tiny"), [](GgufWriter &w) {
          w.set("llama.rope.scaling.type", "yarn");
          w.set("llama.rope.scaling.factor", 4.0f);
          w.set("llama.rope.scaling.yarn_log_multiplier", 0.1f);
        })).find("'llama.rope.scaling.yarn_log_multiplier' = 0.1") != std::string::npos);
  CHECK(load_error(synth(synth_preset("tiny"), [](GgufWriter &w) {
          w.set("llama.rope.scaling.type", "yarn");
          w.set("llama.rope.scaling.factor", 4.0f);
          w.set("llama.rope.scaling.yarn_beta_fast", -1.0f);
        })).find("'llama.rope.scaling.yarn_beta_fast': expected a finite number above 0") != std::string::npos);
  CHECK(with("linear", std::numeric_limits<float>::quiet_NaN()).find("'llama.rope.scaling.factor'") != std::string::npos);
  CHECK(with("linear", -2).find("'llama.rope.scaling.factor'") != std::string::npos);
  CHECK(with("linear", 1) == "no error");
  CHECK(with("yarn", 1) == "no error");
  CHECK(with("none", 4) == "no error");  // llama.cpp ignores the factor when the type is none
  CHECK(hparams("none", 4).rope_scaling_factor == 1.0f);
}

TEST_CASE("arch: a tokenizer larger than the embedding is refused at load; a smaller one (padding rows) loads") {
  auto tokens = [](int n) {
    std::vector<std::string> t;
    for (int i = 0; i < n; ++i) t.push_back(fmt::format("t{}", i));
    return GgufValue::array(t);
  };
  GgufFile larger = synth(synth_preset("tiny"), [&](GgufWriter &w) { w.set("tokenizer.ggml.tokens", tokens(600)); });
  CHECK(load_error(larger) == "synth.gguf: metadata 'tokenizer.ggml.tokens' has 600 tokens but the model's embedding "
                              "has 512 rows ('llama.vocab_size' or token_embd.weight): the tokenizer must not be larger "
                              "than the embedding");
  // A token list of the wrong type is a clear error (as_array() on it threw std::bad_variant_access).
  CHECK(load_error(synth(synth_preset("tiny"), [](GgufWriter &w) { w.set("tokenizer.ggml.tokens", uint32_t(5)); })) ==
        "synth.gguf: metadata 'tokenizer.ggml.tokens': expected an array of string, found u32 5");
  GgufFile smaller = synth(synth_preset("tiny"), [&](GgufWriter &w) { w.set("tokenizer.ggml.tokens", tokens(500)); });
  CHECK(load_error(smaller) == "no error");
  CHECK(load_hparams(smaller).n_vocab == 512);
}
