// tokenizer_gguf.cpp - builds a tokenizer from GGUF tokenizer.ggml.* metadata (models llama and gpt2)
#include <fmt/format.h>
#include <kdsl/error.h>

#include "models/common/printable.h"
#include "models/common/warning.h"
#include "models/gguf/gguf_file.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/spm_tokenizer.h"
#include "models/tokenizer/tokenizer.h"

namespace kdsl::models {

namespace {

const std::string kSpaceMark = "\xE2\x96\x81";  // SentencePiece's ▁

std::string replace_all(std::string s, const std::string &from, const std::string &to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

Vocabulary read_vocabulary(const GgufFile &f, bool spm) {
  Vocabulary v;
  v.pieces = f.get_string_array("tokenizer.ggml.tokens");
  const size_t n = v.pieces.size();
  if (n == 0) throw Error(fmt::format("{}: metadata 'tokenizer.ggml.tokens' is empty", f.path()));
  if (f.has("tokenizer.ggml.scores")) {
    v.scores = f.get_array("tokenizer.ggml.scores", GgufValueType::F32).numbers<float>();
  } else {
    v.scores.assign(spm ? n : 0, 0.0f);
  }
  if (f.has("tokenizer.ggml.token_type")) {
    for (int32_t type : f.get_array("tokenizer.ggml.token_type", GgufValueType::I32).numbers<int32_t>()) {
      if (type < 0 || type > 6)
        throw Error(fmt::format("{}: metadata 'tokenizer.ggml.token_type': token {} has type {}, expected 0..6",
                                f.path(), v.types.size(), type));
      v.types.push_back(TokenType(type));
    }
  } else {
    v.types.assign(n, TokenType::Normal);
  }
  auto same_length = [&](const char *key, size_t size) {
    if (size != n)
      throw Error(fmt::format("{}: metadata '{}' has {} entries, expected one per token ({})", f.path(), key, size, n));
  };
  if (!v.scores.empty()) same_length("tokenizer.ggml.scores", v.scores.size());
  same_length("tokenizer.ggml.token_type", v.types.size());

  auto id = [&](const char *key, int fallback) {
    auto value = f.find_int(key);
    if (!value) return fallback;
    // llama.cpp's own converters write 0xFFFFFFFF (or -1) for "no such token", and llama.cpp
    // runs such files with a warning; any other id outside the vocabulary stays an error.
    if (*value == -1 || *value == int64_t(0xFFFFFFFF)) {
      report_warning(fmt::format("{}: metadata '{}' = {} means no such token; it is treated as absent", f.path(), key, *value));
      return -1;
    }
    if (*value < 0 || *value >= int64_t(n))
      throw Error(fmt::format("{}: metadata '{}': token id {} is outside the vocabulary of {} tokens", f.path(), key,
                              *value, n));
    return int(*value);
  };
  v.bos = id("tokenizer.ggml.bos_token_id", spm ? 1 : -1);
  v.eos = id("tokenizer.ggml.eos_token_id", spm ? 2 : -1);
  v.unk = id("tokenizer.ggml.unknown_token_id", spm ? 0 : -1);
  v.pad = id("tokenizer.ggml.padding_token_id", -1);
  v.eot = id("tokenizer.ggml.eot_token_id", -1);
  if (v.eot < 0)  // chat models whose converter did not record it: the usual end-of-turn names
    for (const char *name : {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>"})
      for (size_t i = 0; i < n && v.eot < 0; ++i)
        if (v.pieces[i] == name && v.types[i] == TokenType::Control) v.eot = int(i);
  v.add_bos = f.find_bool("tokenizer.ggml.add_bos_token").value_or(spm);
  v.add_eos = f.find_bool("tokenizer.ggml.add_eos_token").value_or(false);
  v.add_space_prefix = f.find_bool("tokenizer.ggml.add_space_prefix").value_or(spm);
  return v;
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const GgufFile &f) {
  std::string model = f.get_string("tokenizer.ggml.model");
  if (model == "llama") {
    Vocabulary v = read_vocabulary(f, true);
    for (size_t i = 0; i < v.pieces.size(); ++i)
      if (v.types[i] == TokenType::Normal || v.types[i] == TokenType::UserDefined)
        v.pieces[i] = replace_all(std::move(v.pieces[i]), kSpaceMark, " ");
    try {
      return std::make_unique<SpmTokenizer>(std::move(v));
    } catch (const Error &e) {
      throw Error(fmt::format("{}: {}", f.path(), e.what()));
    }
  }
  if (model == "gpt2") {
    Vocabulary v = read_vocabulary(f, false);
    for (size_t i = 0; i < v.pieces.size(); ++i) {
      if (v.types[i] != TokenType::Normal) continue;  // control and user-defined tokens are plain text
      if (auto bytes = unicode_to_bytes(v.pieces[i])) v.pieces[i] = std::move(*bytes);
      else
        throw Error(fmt::format("{}: metadata 'tokenizer.ggml.tokens': token {} '{}' is not in byte-level spelling",
                                f.path(), i, printable(v.pieces[i])));
    }
    std::string pre_name = f.find_string("tokenizer.ggml.pre").value_or("default");
    auto pre = parse_pre_tokenizer(pre_name);
    if (!pre)
      throw Error(fmt::format("{}: metadata 'tokenizer.ggml.pre': pre-tokenizer '{}' is not supported (supported: "
                              "default, gpt-2, llama-bpe, qwen2, smollm)",
                              f.path(), printable(pre_name)));
    std::vector<std::string> merges = f.get_string_array("tokenizer.ggml.merges");
    try {
      return std::make_unique<BpeTokenizer>(std::move(v), merges, BpeOptions{*pre, *pre == PreTokenizer::Llama3});
    } catch (const Error &e) {
      throw Error(fmt::format("{}: {}", f.path(), e.what()));
    }
  }
  throw Error(fmt::format("{}: metadata 'tokenizer.ggml.model': tokenizer '{}' is not supported (supported: llama, gpt2)",
                          f.path(), printable(model)));
}

}  // namespace kdsl::models
