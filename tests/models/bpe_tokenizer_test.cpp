// bpe_tokenizer_test.cpp - byte-level BPE against HF tokenizers (generated fixture), pre-tokenizers, merges, specials
#include <doctest/doctest.h>

#include <fstream>
#include <kdsl/error.h>
#include <nlohmann/json.hpp>

#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_writer.h"
#include "models/tokenizer/bpe_tokenizer.h"
#include "models/tokenizer/byte_level.h"
#include "models/tokenizer/pre_tokenizer.h"

using namespace kdsl::models;
using Words = std::vector<std::string_view>;

namespace {

// A gpt2-model GGUF tokenizer over `tokens` (byte-level spelling), the last `specials` control.
std::unique_ptr<Tokenizer> gguf_bpe(const std::vector<std::string> &tokens, const std::vector<std::string> &merges,
                                    size_t specials, const std::string &pre) {
  GgufWriter w;
  std::vector<int32_t> types(tokens.size(), int32_t(TokenType::Normal));
  for (size_t i = tokens.size() - specials; i < tokens.size(); ++i) types[i] = int32_t(TokenType::Control);
  w.set("tokenizer.ggml.model", "gpt2");
  w.set("tokenizer.ggml.pre", pre);
  w.set("tokenizer.ggml.tokens", GgufValue::array(tokens));
  w.set("tokenizer.ggml.token_type", GgufValue::array(types));
  w.set("tokenizer.ggml.merges", GgufValue::array(merges));
  return load_tokenizer(GgufFile::from_bytes(w.to_bytes(), "bpe.gguf"));
}

// 256 byte tokens, then "ab", "abc", "Ġa", then <|s|>.
std::unique_ptr<Tokenizer> small_bpe(const std::string &pre = "default") {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.push_back(byte_to_unicode(uint8_t(b)));
  for (const char *t : {"ab", "abc", "\xC4\xA0" "a", "<|s|>"}) tokens.push_back(t);
  return gguf_bpe(tokens, {"a b", "ab c", "\xC4\xA0 a"}, 1, pre);
}

}  // namespace

TEST_CASE("bpe: matches HF tokenizers on ~1000 strings under four pre-tokenizers") {
  std::string path = std::string(KDSL_SOURCE_DIR) + "/tests/models/data/bpe_hf_fixture.json";
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "missing " << path << " (regenerate with scripts/gen_bpe_fixture.py)");
  nlohmann::json fixture = nlohmann::json::parse(in);
  auto tokens = fixture["tokens"].get<std::vector<std::string>>();
  auto merges = fixture["merges"].get<std::vector<std::string>>();
  size_t specials = fixture["special_count"].get<size_t>();
  for (std::string pre : {"gpt2", "llama-bpe", "qwen2", "smollm"}) {
    auto tok = gguf_bpe(tokens, merges, specials, pre);
    int checked = 0, mismatches = 0;
    for (const auto &c : fixture["cases"]) {
      std::string text = c["text"].get<std::string>();
      auto expected = c[pre].get<std::vector<int>>();
      auto ids = tok->encode(text, false);
      ++checked;
      if (ids != expected && ++mismatches <= 3)
        FAIL_CHECK(pre << ": '" << text << "' gives " << doctest::toString(ids) << ", HF gives "
                       << doctest::toString(expected));
      // decoding drops control tokens, so the text round-trips without them
      std::string plain = text;
      for (size_t i = tokens.size() - specials; i < tokens.size(); ++i)
        for (size_t at; (at = plain.find(tokens[i])) != std::string::npos;) plain.erase(at, tokens[i].size());
      if (tok->decode(ids) != plain && ++mismatches <= 3) FAIL_CHECK(pre << ": '" << text << "' does not round-trip");
    }
    CHECK(checked > 1000);
    CHECK(mismatches == 0);
  }
}

TEST_CASE("bpe: pre-tokenizers split as their regexes do") {
  std::string text = "Hello world's  test\n\nfoo 12345";
  CHECK(pre_tokenize(PreTokenizer::Gpt2, text) ==
        Words{"Hello", " world", "'s", " ", " test", "\n", "\n", "foo", " 12345"});
  CHECK(pre_tokenize(PreTokenizer::Llama3, text) ==
        Words{"Hello", " world", "'s", " ", " test", "\n\n", "foo", " ", "123", "45"});
  CHECK(pre_tokenize(PreTokenizer::Qwen2, text) ==
        Words{"Hello", " world", "'s", " ", " test", "\n\n", "foo", " ", "1", "2", "3", "4", "5"});
  // Llama 3 lowercases contractions and lets any non-letter lead a word
  CHECK(pre_tokenize(PreTokenizer::Llama3, "IT'S $x ..\n\ny") == Words{"IT", "'S", " $", "x", " ..\n\n", "y"});
  CHECK(pre_tokenize(PreTokenizer::Gpt2, "IT'S") == Words{"IT", "'", "S"});
  CHECK(pre_tokenize(PreTokenizer::Gpt2, "日本 語") == Words{"日本", " 語"});
  CHECK(pre_tokenize(PreTokenizer::Gpt2, "a \xFF b") == Words{"a", " \xFF", " b"});  // malformed byte: punctuation-like
  CHECK(pre_tokenize(PreTokenizer::Gpt2, "") == Words{});
  CHECK(pre_tokenize(PreTokenizer::SmolLM, "a  12 x") == Words{"a", "  ", "1", "2", " x"});
  CHECK(parse_pre_tokenizer("llama-bpe") == PreTokenizer::Llama3);
  CHECK_FALSE(parse_pre_tokenizer("falcon"));
}

TEST_CASE("bpe: merges apply by rank, special tokens are never split") {
  auto tok = small_bpe();
  const int ab = 256, abc = 257, space_a = 258, special = 259;
  CHECK(tok->encode("abc", false) == std::vector<int>{abc});
  CHECK(tok->encode("abd", false) == std::vector<int>{ab, 'd'});
  // " abc": of (Ġ,a) rank 2 and (a,b) rank 0, (a,b) merges first; then (ab,c) rank 1.
  CHECK(tok->encode(" abc", false) == std::vector<int>{' ', abc});
  CHECK(tok->encode(" a", false) == std::vector<int>{space_a});
  CHECK(tok->encode("x<|s|>abc<|s|>", false) == std::vector<int>{'x', special, abc, special});
  CHECK(tok->encode("<|s|>", false, false) == std::vector<int>{'<', '|', 's', '|', '>'});
  CHECK(tok->decode(std::vector<int>{'x', special, abc}) == "xabc");
  CHECK(tok->token_to_piece(special, true) == "<|s|>");
  CHECK(tok->bos_id() == -1);
  CHECK(tok->encode("a", true) == std::vector<int>{'a'});  // no BOS in this vocabulary
}
