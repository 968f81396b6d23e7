// spm_tokenizer_test.cpp - SentencePiece BPE: Llama 2 and aidreams reference ids, merges, byte fallback, specials
#include <doctest/doctest.h>

#include <fstream>
#include <kdsl/error.h>

#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_writer.h"
#include "models/llama2c/tokenizer_bin.h"
#include "models/tokenizer/spm_tokenizer.h"
#include "shared_models.h"

using namespace kdsl::models;
using kdsl::test::scratch_path;
using kdsl::test::shared_model;
using Ids = std::vector<int>;

namespace {

// <unk> <s> </s>, the 256 byte pieces, then `pieces` with their scores.
Vocabulary small_vocab(const std::vector<std::pair<std::string, float>> &pieces) {
  Vocabulary v;
  v.pieces = {"<unk>", "<s>", "</s>"};
  v.types = {TokenType::Unknown, TokenType::Control, TokenType::Control};
  v.scores = {0, 0, 0};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    v.pieces.push_back(name);
    v.types.push_back(TokenType::Byte);
    v.scores.push_back(0);
  }
  for (auto &[p, s] : pieces) {
    v.pieces.push_back(p);
    v.types.push_back(TokenType::Normal);
    v.scores.push_back(s);
  }
  v.bos = 1;
  v.eos = 2;
  v.unk = 0;
  return v;
}

}  // namespace

TEST_CASE("spm: Llama 2 tokenizer matches Meta's encodings") {
  auto path = shared_model("llama2-tokenizer.bin");
  if (!path) return;
  auto tok = load_tokenizer_bin(*path);
  REQUIRE(tok->vocab_size() == 32000);
  CHECK(tok->encode("I believe the meaning of life is", true) == Ids{1, 306, 4658, 278, 6593, 310, 2834, 338});
  CHECK(tok->encode("Simply put, the theory of relativity states that ", true) ==
        Ids{1, 3439, 17632, 1925, 29892, 278, 6368, 310, 14215, 537, 5922, 393, 29871});
  CHECK(tok->encode("", true) == Ids{1});
  CHECK(tok->encode("", false) == Ids{});
  // Text round-trips through byte fallback, including characters missing from the vocabulary.
  for (std::string text : {"Hello, world!", "naïve café — 東京 🙂", "tabs\tand\nnewlines", "  two leading spaces"})
    CHECK(tok->decode(tok->encode(text, true)) == text);
  // 🙂 (F0 9F 99 82) is not a piece: four byte tokens, ids 3 + byte.
  Ids smile = tok->encode("🙂", false);
  CHECK(std::vector<int>(smile.end() - 4, smile.end()) == Ids{3 + 0xF0, 3 + 0x9F, 3 + 0x99, 3 + 0x82});
}

TEST_CASE("spm: aidreams prompts match the reference ids") {
  auto path = shared_model("aidreams-tok512.bin");
  if (!path) return;
  auto tok = load_tokenizer_bin(*path, 512);
  CHECK(tok->encode("I dreamed", true) == Ids{1, 303, 281, 269, 435, 447, 328});
  CHECK(tok->encode("The river", true) == Ids{1, 368, 430, 429, 322, 350});
  CHECK(tok->decode(Ids{1, 303, 281, 269, 435, 447, 328}) == "I dreamed");
}

TEST_CASE("spm: the best-scoring pair merges first, leftmost on ties") {
  // "abc": "ab" (score 1) and "bc" (score 2) compete; "bc" wins, then "abc" is not a piece.
  SpmTokenizer t(small_vocab({{" ", -1}, {"a", -1}, {"b", -1}, {"c", -1}, {"ab", 1}, {"bc", 2}}));
  const int space = 259, a = 260, b = 261, ab = 263, bc = 264;
  CHECK(t.encode("abc", false) == Ids{space, a, bc});
  // "abab": both "ab" pairs tie; merging the left one first still yields two "ab".
  CHECK(t.encode("abab", false) == Ids{space, ab, ab});
  // "bcb": "bc" at 0 and "cb" (not a piece); then b alone.
  CHECK(t.encode("bcb", false) == Ids{space, bc, b});
  SpmTokenizer u(small_vocab({{" ", -1}, {"a", -1}, {"aa", 1}, {"aaa", 5}}));
  // " aaaa": the three "aa" pairs tie at score 1; the leftmost merges, giving aa|a|a, then
  // "aaa" (score 5) beats the remaining "aa" pair, leaving one "a".
  CHECK(u.encode("aaaa", false) == Ids{259, 262, 260});
}

TEST_CASE("spm: characters outside the vocabulary fall back to bytes, or <unk> without byte pieces") {
  SpmTokenizer t(small_vocab({{" ", -1}, {"a", -1}}));
  CHECK(t.encode("aé", false) == Ids{259, 260, 3 + 0xC3, 3 + 0xA9});
  CHECK(t.decode(t.encode("aé", true)) == "aé");
  Vocabulary no_bytes;
  no_bytes.pieces = {"<unk>", "<s>", "</s>", " ", "a"};
  no_bytes.types = {TokenType::Unknown, TokenType::Control, TokenType::Control, TokenType::Normal, TokenType::Normal};
  no_bytes.scores = {0, 0, 0, 0, 0};
  no_bytes.unk = 0;
  SpmTokenizer u(no_bytes);
  CHECK(u.encode("ab", false) == Ids{3, 4, 0});
}

TEST_CASE("spm: special tokens in the text are matched when asked") {
  SpmTokenizer t(small_vocab({{" ", -1}, {"a", -1}, {"<", -1}, {"s", -1}, {">", -1}}));
  CHECK(t.encode("a<s>a", false, true) == Ids{259, 260, 1, 259, 260});
  CHECK(t.encode("a<s>a", false, false) == Ids{259, 260, 261, 262, 263, 260});
  CHECK(t.decode(Ids{1, 259, 260, 1, 259, 260}) == "a a");
}

TEST_CASE("spm: tokenizer.bin errors name the file and the field") {
  std::string path = scratch_path("bad_tokenizer.bin");
  {
    std::ofstream out(path, std::ios::binary);
    int32_t max_len = 4, len = 9;
    float score = 0;
    out.write(reinterpret_cast<const char *>(&max_len), 4);
    out.write(reinterpret_cast<const char *>(&score), 4);
    out.write(reinterpret_cast<const char *>(&len), 4);
  }
  CHECK_THROWS_WITH_AS(load_tokenizer_bin(path), doctest::Contains("token 0 length: expected 0..4 (max_token_length), found 9"),
                       kdsl::Error);
  CHECK_THROWS_WITH_AS(load_tokenizer_bin(path, 600), doctest::Contains("bad_tokenizer.bin"), kdsl::Error);
}

TEST_CASE("spm: a byte token not spelled <0xHH> is refused at load, naming the file, the token and its text") {
  auto gguf_with_byte_piece = [](const std::string &piece) {
    Vocabulary v = small_vocab({{"a", -1}});
    v.pieces[3 + 0x41] = piece;
    std::vector<int32_t> types;
    for (TokenType t : v.types) types.push_back(int32_t(t));
    GgufWriter w;
    w.set("tokenizer.ggml.model", "llama");
    w.set("tokenizer.ggml.tokens", GgufValue::array(v.pieces));
    w.set("tokenizer.ggml.scores", GgufValue::array(v.scores));
    w.set("tokenizer.ggml.token_type", GgufValue::array(types));
    return GgufFile::from_bytes(w.to_bytes(), "bytes.gguf");
  };
  // This used to load, and decoding id 68 then died in std::stoi.
  CHECK_THROWS_WITH_AS(load_tokenizer(gguf_with_byte_piece("<0xZZ>")),
                       "bytes.gguf: tokenizer: token 68 '<0xZZ>' has type byte but is not spelled <0x00> .. <0xFF>",
                       kdsl::Error);
  CHECK_THROWS_WITH_AS(load_tokenizer(gguf_with_byte_piece("<0x\x1b>")),
                       doctest::Contains("token 68 '<0x\\x1b>' has type byte"), kdsl::Error);
  // Lower-case hex digits are a valid spelling (llama.cpp reads them with strtol).
  auto lower = load_tokenizer(gguf_with_byte_piece("<0x4a>"));
  CHECK(lower->token_to_piece(68) == "J");
  CHECK(byte_piece_value("<0xFF>") == uint8_t(255));
  CHECK(!byte_piece_value("<0x1>"));
  CHECK(!byte_piece_value("<0x1G>"));
  CHECK_THROWS_WITH_AS(lower->token_to_piece(lower->vocab_size()), doctest::Contains("token id 260 is out of range"),
                       kdsl::Error);
}
