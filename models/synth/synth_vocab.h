// synth_vocab.h - deterministic synthetic tokenizers of any size, written as GGUF tokenizer.ggml.* metadata
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kdsl::models {

class GgufWriter;

// A SentencePiece vocabulary of exactly `size` pieces (size >= 259): <unk>, <s>, </s>, the 256
// byte-fallback pieces, printable ASCII and "▁", then letter n-grams (with and without a
// leading "▁") in order of length, scored so shorter pieces merge first. Every n-gram's
// prefix is in the vocabulary, so merges can reach it. Writes model `llama` metadata.
void write_synthetic_spm_vocab(GgufWriter &writer, int64_t size);

// A byte-level BPE vocabulary of exactly `size` tokens (size >= 256 + 3): the 256 byte tokens,
// merges of letter n-grams (with and without a leading space), then the special tokens
// <|endoftext|>, <|im_start|>, <|im_end|> at the end. Writes model `gpt2` metadata with
// tokenizer.ggml.pre = `pre`.
void write_synthetic_bpe_vocab(GgufWriter &writer, int64_t size, const std::string &pre);

}  // namespace kdsl::models
