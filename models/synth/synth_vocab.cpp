// synth_vocab.cpp - builds synthetic SentencePiece and byte-level BPE vocabularies that real tokenizers accept
#include "models/synth/synth_vocab.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include "models/gguf/gguf_writer.h"
#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/vocabulary.h"

namespace kdsl::models {

namespace {

// Letter n-grams "a".."z", "aa".., each also with a leading `space`, shortest first, until
// `count` are produced. Each n-gram of length k > 1 follows its (k-1)-prefix.
std::vector<std::string> ngrams(const std::string &space, size_t count) {
  std::vector<std::string> out, layer = {""};
  while (out.size() < count) {
    std::vector<std::string> next;
    for (const std::string &p : layer)
      for (char c = 'a'; c <= 'z'; ++c) next.push_back(p + c);
    for (const std::string &n : next) {
      if (n.size() > 1 && out.size() < count) out.push_back(n);
      if (out.size() < count) out.push_back(space + n);
    }
    layer = std::move(next);
  }
  return out;
}

}  // namespace

void write_synthetic_spm_vocab(GgufWriter &w, int64_t size) {
  if (size < 259)
    throw Error(fmt::format("synthetic SentencePiece vocabulary: size must be at least 259 (3 special + 256 byte "
                            "pieces), found {}",
                            size));
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {int32_t(TokenType::Unknown), int32_t(TokenType::Control), int32_t(TokenType::Control)};
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(fmt::format("<0x{:02X}>", b));
    scores.push_back(0);
    types.push_back(int32_t(TokenType::Byte));
  }
  auto add = [&](std::string piece) {
    if (int64_t(tokens.size()) >= size) return;
    scores.push_back(-float(tokens.size()));
    tokens.push_back(std::move(piece));
    types.push_back(int32_t(TokenType::Normal));
  };
  add("\xE2\x96\x81");  // ▁
  for (char c = 33; c < 127; ++c) add(std::string(1, c));
  for (std::string &n : ngrams("\xE2\x96\x81", size_t(std::max<int64_t>(0, size - int64_t(tokens.size())))))
    add(std::move(n));
  w.set("tokenizer.ggml.model", "llama");
  w.set("tokenizer.ggml.tokens", GgufValue::array(tokens));
  w.set("tokenizer.ggml.scores", GgufValue::array(scores));
  w.set("tokenizer.ggml.token_type", GgufValue::array(types));
  w.set("tokenizer.ggml.bos_token_id", uint32_t(1));
  w.set("tokenizer.ggml.eos_token_id", uint32_t(2));
  w.set("tokenizer.ggml.unknown_token_id", uint32_t(0));
  w.set("tokenizer.ggml.add_bos_token", true);
  w.set("tokenizer.ggml.add_eos_token", false);
}

void write_synthetic_bpe_vocab(GgufWriter &w, int64_t size, const std::string &pre) {
  const std::vector<std::string> specials = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  if (size < 256 + int64_t(specials.size()))
    throw Error(fmt::format("synthetic BPE vocabulary: size must be at least 259 (256 bytes + 3 special tokens), found {}",
                            size));
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(byte_to_unicode(uint8_t(b)));
    types.push_back(int32_t(TokenType::Normal));
  }
  std::vector<std::string> merges;
  const std::string space = byte_to_unicode(' ');
  size_t wanted = size_t(size) - tokens.size() - specials.size();
  for (const std::string &n : ngrams(space, wanted)) {
    // every n-gram is its (k-1)-prefix plus one letter; " a" is the space byte plus "a"
    size_t split = n.size() - 1;
    merges.push_back(n.substr(0, split) + " " + n.substr(split));
    tokens.push_back(n);
    types.push_back(int32_t(TokenType::Normal));
  }
  for (const std::string &s : specials) {
    tokens.push_back(s);
    types.push_back(int32_t(TokenType::Control));
  }
  const uint32_t endoftext = uint32_t(tokens.size() - 3), im_end = uint32_t(tokens.size() - 1);
  w.set("tokenizer.ggml.model", "gpt2");
  w.set("tokenizer.ggml.pre", pre);
  w.set("tokenizer.ggml.tokens", GgufValue::array(tokens));
  w.set("tokenizer.ggml.token_type", GgufValue::array(types));
  w.set("tokenizer.ggml.merges", GgufValue::array(merges));
  w.set("tokenizer.ggml.bos_token_id", endoftext);
  w.set("tokenizer.ggml.eos_token_id", im_end);
  w.set("tokenizer.ggml.padding_token_id", endoftext);
  w.set("tokenizer.ggml.add_bos_token", false);
}

}  // namespace kdsl::models
