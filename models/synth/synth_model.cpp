// synth_model.cpp - fills the architecture's tensor table with seeded random weights and a synthetic tokenizer
#include "models/synth/synth_model.h"

#include <sys/statvfs.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <kdsl/error.h>

#include "models/arch/model_tensors.h"
#include "models/gguf/gguf_writer.h"
#include "models/gguf/quantize.h"
#include "models/sampler/rng.h"
#include "models/synth/synth_vocab.h"

namespace kdsl::models {

SynthConfig synth_preset(const std::string &name) {
  SynthConfig c;
  ModelHParams &h = c.hparams;
  h.context_length = 2048;
  if (name == "tiny") {
    h.n_embd = 64, h.n_layer = 2, h.n_head = 4, h.n_head_kv = 2, h.n_ff = 128, h.n_vocab = 512;
  } else if (name == "110m") {
    h.n_embd = 768, h.n_layer = 12, h.n_head = 12, h.n_head_kv = 12, h.n_ff = 2048, h.n_vocab = 32000;
    h.context_length = 1024;
  } else if (name == "qwen3-tiny") {
    h.arch = Arch::Qwen3;
    h.n_embd = 64, h.n_layer = 2, h.n_head = 4, h.n_head_kv = 2, h.head_dim = 32, h.n_ff = 128, h.n_vocab = 600;
    h.rope_freq_base = 1000000.0f, h.rms_eps = 1e-6f;
    c.tied_embeddings = true;
  } else if (name == "llama3-8b") {
    // Llama 3 8B's shapes (grouped-query: 32 heads over 8 KV heads), for GPU benchmarks.
    h.n_embd = 4096, h.n_layer = 32, h.n_head = 32, h.n_head_kv = 8, h.n_ff = 14336, h.n_vocab = 128256;
    h.rope_freq_base = 500000.0f, h.rms_eps = 1e-5f, h.context_length = 8192;
  } else {
    throw Error(fmt::format("synthetic model preset '{}' is unknown (presets: tiny, 110m, qwen3-tiny, llama3-8b)", name));
  }
  return c;
}

namespace {

// llama.cpp's general.file_type (its llama_ftype) for a file whose matrices are `t`: without it
// llama.cpp guesses ("Q4_K - Medium" for a pure Q4_K file). The k-quants are the "_S" mixes,
// which are the ones all of whose matrices have the one type. kdsl's own types have none (and
// llama.cpp cannot read their files anyway): nullopt, and the key is left out.
std::optional<uint32_t> llama_file_type(GgmlType t) {
  int ftype = ggml_type_traits(t).llama_ftype;
  if (ftype < 0 && ggml_type_traits(t).kdsl_only()) return std::nullopt;
  if (ftype < 0) throw Error(fmt::format("synthetic model: no llama.cpp file type for {} matrices", ggml_type_traits(t).ggml_name));
  return uint32_t(ftype);
}

// "110M", "8.0B": general.size_label as llama.cpp's converter writes it.
std::string size_label(uint64_t parameters) {
  if (parameters >= 1'000'000'000) return fmt::format("{:.1f}B", double(parameters) / 1e9);
  if (parameters >= 1'000'000) return fmt::format("{:.0f}M", double(parameters) / 1e6);
  return fmt::format("{:.0f}K", double(parameters) / 1e3);
}

uint64_t name_seed(uint64_t seed, const std::string &name) {
  uint64_t h = 0xCBF29CE484222325ull ^ seed;  // FNV-1a over the name
  for (char c : name) h = (h ^ uint8_t(c)) * 0x100000001B3ull;
  return h;
}

}  // namespace

uint64_t add_synthetic_model(GgufWriter &w, const SynthConfig &config) {
  ModelHParams h = config.hparams;
  // Bounds before anything is sized from them: a dimension of 2^30 or 10^8 layers is a typo, and
  // must be a one-line refusal, not an allocation of gigabytes.
  auto in_range = [](const char *field, int64_t v, int64_t max) {
    if (v <= 0 || v > max) throw Error(fmt::format("synthetic model: {} must be 1 to {}, found {}", field, max, v));
  };
  in_range("embedding length (dim)", h.n_embd, 1 << 16);
  in_range("layer count", h.n_layer, 1024);
  in_range("head count", h.n_head, 1024);
  in_range("feed-forward length", h.n_ff, 1 << 18);
  in_range("vocabulary size", h.n_vocab, 1 << 20);
  in_range("context length", h.context_length, 1 << 24);
  if (h.n_head_kv < 0 || h.n_head_kv > h.n_head)
    throw Error(fmt::format("synthetic model: KV head count must be 1 to the head count {}, found {}", h.n_head, h.n_head_kv));
  if (h.head_dim < 0 || h.head_dim > 1024) throw Error(fmt::format("synthetic model: head size must be 1 to 1024, found {}", h.head_dim));
  if (h.n_head_kv <= 0) h.n_head_kv = h.n_head;
  if (h.n_head % h.n_head_kv != 0)
    throw Error(fmt::format("synthetic model: head count {} is not a multiple of the KV head count {}", h.n_head,
                            h.n_head_kv));
  if (h.head_dim <= 0) {
    if (h.n_embd % h.n_head != 0)
      throw Error(fmt::format("synthetic model: dim {} is not divisible by the head count {}", h.n_embd, h.n_head));
    h.head_dim = h.n_embd / h.n_head;
  }
  if (h.head_dim_v <= 0) h.head_dim_v = h.head_dim;
  if (h.n_rot <= 0) h.n_rot = h.head_dim;
  // RoPE turns pairs of dimensions; kdsl-run refuses an odd count.
  if (h.n_rot % 2 != 0 || h.n_rot > h.head_dim)
    throw Error(fmt::format("synthetic model: head size {} (RoPE dimensions {}) must be even", h.head_dim, h.n_rot));
  h.rope_type = h.arch == Arch::Llama ? RopeType::Normal : RopeType::Neox;

  write_hparams(w, h);
  w.set("general.name", fmt::format("kdsl synthetic {} {}x{}", arch_name(h.arch), h.n_layer, h.n_embd));
  bool spm = config.tokenizer == SynthTokenizer::SentencePiece ||
             (config.tokenizer == SynthTokenizer::Default && h.arch == Arch::Llama);
  if (spm) write_synthetic_spm_vocab(w, h.n_vocab);
  else write_synthetic_bpe_vocab(w, h.n_vocab, h.arch == Arch::Llama ? "llama-bpe" : "qwen2");
  if (!config.chat_template.empty()) w.set("tokenizer.chat_template", config.chat_template);

  uint64_t total_bytes = 0, parameters = 0;
  if (std::optional<uint32_t> ftype = llama_file_type(config.weight_type)) w.set("general.file_type", *ftype);
  for (const TensorSpec &spec : tensor_specs(h)) {
    if (spec.name == TensorName::RopeFreqs) continue;
    if (spec.name == TensorName::Output && config.tied_embeddings) continue;
    std::string name = tensor_name(spec.name, spec.layer);
    int64_t elements = 1;
    for (int64_t d : spec.shape) elements *= d;
    parameters += uint64_t(elements);
    bool matrix = spec.shape.size() == 2;
    bool embedding = spec.name == TensorName::TokenEmbd || spec.name == TensorName::Output;
    GgmlType type = !matrix ? GgmlType::F32 : embedding ? config.embedding_type : config.weight_type;
    try {
      total_bytes += GgufWriter::tensor_bytes(type, spec.shape);
    } catch (const Error &e) {
      throw Error(fmt::format("synthetic model: tensor '{}' cannot be stored as {}: {}", name,
                              ggml_type_traits(type).ggml_name, e.what()));
    }
    bool is_norm = !matrix && name.find("norm") != std::string::npos;
    float range = matrix ? 1.0f / std::sqrt(float(spec.shape[0])) : 0.05f;
    uint64_t seed = name_seed(config.seed, name);
    std::vector<int64_t> shape = spec.shape;
    w.add_tensor(name, shape, type, [=](std::span<std::byte> out) {
      Rng rng(seed);
      const int64_t row = shape[0];
      const size_t row_bytes = GgufWriter::tensor_bytes(type, {row}), rows = out.size() / row_bytes;
      std::vector<float> values(static_cast<size_t>(row));
      for (size_t r = 0; r < rows; ++r) {
        for (float &v : values) v = (is_norm ? 1.0f : 0.0f) + range * float(2 * rng.uniform() - 1);
        quantize_row(type, values.data(), out.data() + r * row_bytes, row);
      }
    });
  }
  w.set("general.size_label", size_label(parameters));
  return total_bytes;
}

void write_synthetic_model(const SynthConfig &config, const std::string &path) {
  GgufWriter w;
  uint64_t bytes = add_synthetic_model(w, config);
  std::filesystem::path folder = std::filesystem::absolute(path).parent_path();
  struct statvfs fs = {};
  if (::statvfs(folder.c_str(), &fs) == 0) {
    uint64_t free_bytes = uint64_t(fs.f_bavail) * fs.f_frsize;
    if (bytes > free_bytes)
      throw Error(fmt::format("{}: the synthetic model needs {:.2f} GB but {} has {:.2f} GB free", path, double(bytes) / 1e9,
                              folder.string(), double(free_bytes) / 1e9));
  }
  w.write(path);
}

}  // namespace kdsl::models
