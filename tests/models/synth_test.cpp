// synth_test.cpp - synthetic GGUF models: deterministic bytes, every tensor type, usable tokenizers, clear errors
#include <doctest/doctest.h>

#include <cmath>
#include <fmt/format.h>
#include <kdsl/error.h>

#include "models/arch/model_tensors.h"
#include "models/gguf/dequantize.h"
#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_writer.h"
#include "models/synth/synth_model.h"
#include "models/tokenizer/tokenizer.h"
#include "shared_models.h"

using namespace kdsl::models;

namespace {

std::vector<std::byte> bytes_of(const SynthConfig &c) {
  GgufWriter w;
  add_synthetic_model(w, c);
  return w.to_bytes();
}

}  // namespace

TEST_CASE("synth: the same config gives the same bytes, another seed other weights") {
  SynthConfig c = synth_preset("tiny");
  auto a = bytes_of(c), b = bytes_of(c);
  CHECK(a == b);
  c.seed = 2;
  auto d = bytes_of(c);
  CHECK(a.size() == d.size());
  CHECK(a != d);
}

TEST_CASE("synth: quantized weights load, and dequantize to the intended range") {
  for (GgmlType type : {GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0,
                        GgmlType::Q5_1, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
    SynthConfig c = synth_preset("tiny");
    c.hparams.n_embd = 256, c.hparams.n_ff = 512, c.hparams.n_layer = 1;
    c.weight_type = type;
    c.embedding_type = GgmlType::Q8_0;
    GgufFile f = GgufFile::from_bytes(bytes_of(c), "q.gguf");
    ModelTensors t = load_tensors(f, load_hparams(f));
    const GgufTensorInfo &w = *t.layers[0].ffn_up;
    CHECK(w.type == type);
    std::vector<float> row(256);
    dequantize_row(type, w.data, row.data(), 256);
    float bound = 1.0f / 16 * 1.1f, sum = 0;  // 1/sqrt(256), plus quantization slack
    for (float v : row) {
      CHECK(std::fabs(v) <= bound);
      sum += v * v;
    }
    CHECK(std::sqrt(sum / 256) > 0.02f);  // uniform(-1/16, 1/16) has RMS 0.036
    std::vector<float> norm(256);
    dequantize_row(GgmlType::F32, t.layers[0].attn_norm->data, norm.data(), 256);
    CHECK(norm[7] == doctest::Approx(1.0).epsilon(0.06));
  }
}

TEST_CASE("synth: a 110M Llama has the right tensor count and parameter count") {
  SynthConfig c = synth_preset("110m");
  GgufWriter w;
  add_synthetic_model(w, c);
  // Building metadata and tensor infos is cheap; the weights are generated only when written.
  GgufFile f = GgufFile::from_bytes(w.to_bytes(), "110m.gguf");
  int64_t params = 0;
  for (const GgufTensorInfo &t : f.tensors()) params += t.elements();
  CHECK(f.tensors().size() == 3 + 12 * 9);
  CHECK(params == 32000 * 768 * 2 + 768 + 12 * (2 * 768 + 4 * 768 * 768 + 3 * 768 * 2048));
  CHECK(load_tokenizer(f)->vocab_size() == 32000);
}

TEST_CASE("synth: the synthetic tokenizers round-trip text") {
  for (const char *preset : {"tiny", "qwen3-tiny"}) {
    GgufFile f = GgufFile::from_bytes(bytes_of(synth_preset(preset)), "t.gguf");
    auto tok = load_tokenizer(f);
    std::string text = "hello world, the quick brown fox! 123 café";
    auto ids = tok->encode(text, true);
    CHECK(tok->decode(ids) == text);
    CHECK(ids.size() < text.size());  // merges happened
  }
}

TEST_CASE("synth: impossible configurations name the tensor or field") {
  SynthConfig c = synth_preset("tiny");
  c.weight_type = GgmlType::Q4_K;
  CHECK_THROWS_WITH_AS(bytes_of(c), doctest::Contains("tensor 'blk.0.attn_q.weight' cannot be stored as Q4_K"), kdsl::Error);
  c = synth_preset("tiny");
  c.hparams.n_head = 5;
  CHECK_THROWS_WITH_AS(bytes_of(c), doctest::Contains("head count 5 is not a multiple of the KV head count 2"), kdsl::Error);
  c = synth_preset("tiny");
  c.hparams.n_vocab = 100;
  CHECK_THROWS_WITH_AS(bytes_of(c), doctest::Contains("size must be at least 259"), kdsl::Error);
  CHECK_THROWS_WITH_AS(synth_preset("huge"), doctest::Contains("presets: tiny, 110m, qwen3-tiny"), kdsl::Error);
}

TEST_CASE("synth: general.file_type and general.size_label tell llama.cpp what the file is") {
  // llama.cpp's llama_ftype: without it llama.cpp guessed "Q4_K - Medium" for a pure Q4_K file.
  for (auto [type, ftype] : {std::pair{GgmlType::F32, 0}, {GgmlType::F16, 1}, {GgmlType::Q4_0, 2}, {GgmlType::Q8_0, 7},
                             {GgmlType::Q4_K, 14}, {GgmlType::Q6_K, 18}, {GgmlType::BF16, 32}}) {
    SynthConfig c = synth_preset("tiny");
    c.hparams.n_embd = 256, c.hparams.n_ff = 256;  // k-quant rows are 256 long
    c.weight_type = type;
    GgufFile f = GgufFile::from_bytes(bytes_of(c), "synth.gguf");
    CHECK(f.get_int("general.file_type") == ftype);
  }
  SynthConfig c = synth_preset("tiny");
  GgufFile f = GgufFile::from_bytes(bytes_of(c), "synth.gguf");
  // tiny: 512 x 64 embedding and classifier, 2 layers of Q and O 64 x 64, K and V 64 x 32 (2 KV
  // heads of 16), three 64 x 128 feed-forward matrices and two norms; the output norm.
  int64_t parameters = 2 * 512 * 64 + 64 + 2 * (2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 128 + 2 * 64);
  CHECK(f.get_string("general.size_label") == fmt::format("{:.0f}K", double(parameters) / 1e3));
}
