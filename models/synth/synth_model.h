// synth_model.h - GGUF models of any llama / qwen2 / qwen3 shape with deterministic random weights
#pragma once
#include <cstdint>
#include <string>

#include "models/arch/hparams.h"
#include "models/gguf/gguf_types.h"

namespace kdsl::models {

class GgufWriter;

enum class SynthTokenizer { Default, SentencePiece, ByteLevelBpe };

struct SynthConfig {
  ModelHParams hparams;  // arch and dimensions; head_dim 0 means n_embd / n_head
  GgmlType weight_type = GgmlType::F32;     // attention and feed-forward matrices
  GgmlType embedding_type = GgmlType::F32;  // token_embd and output
  bool tied_embeddings = false;             // omit output.weight
  SynthTokenizer tokenizer = SynthTokenizer::Default;  // llama: SentencePiece; qwen: byte-level BPE
  std::string chat_template;                // tokenizer.chat_template, if not empty
  uint64_t seed = 1;
};

// A config for the named preset: "tiny" (dim 64, 2 layers, vocab 512), "110m" (Llama 2 110M:
// dim 768, 12 layers, 12 heads, vocab 32000), "qwen3-tiny", "llama3-8b" (Llama 3 8B's shapes).
// Throws kdsl::Error listing the presets.
SynthConfig synth_preset(const std::string &name);

// Adds metadata and tensors for `config` to `writer`. Weights are uniform in
// [-1/sqrt(fan_in), 1/sqrt(fan_in)], norms near 1, biases near 0, each tensor seeded from
// the config's seed and its name, so the same config always gives the same bytes. Tensors
// are generated at write time, one at a time. A shape the chosen type cannot hold (a first
// dimension not a multiple of its block size) throws kdsl::Error naming the tensor, as does a
// shape kdsl-run would refuse (an odd RoPE dimension count, dimensions past the loader's bounds).
// Returns the bytes of tensor data the file will hold.
uint64_t add_synthetic_model(GgufWriter &writer, const SynthConfig &config);

// add_synthetic_model into a fresh writer, then writes `path`; refuses (before writing) a model
// larger than the free space of the folder it goes to.
void write_synthetic_model(const SynthConfig &config, const std::string &path);

}  // namespace kdsl::models
