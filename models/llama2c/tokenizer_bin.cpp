// tokenizer_bin.cpp - reads llama2.c tokenizer.bin files into a SentencePiece vocabulary
#include "models/llama2c/tokenizer_bin.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include "models/common/mapped_file.h"
#include "models/tokenizer/spm_tokenizer.h"

namespace kdsl::models {

namespace {

bool is_byte_piece(const std::string &p) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
  return p.size() == 6 && p.starts_with("<0x") && hex(p[3]) && hex(p[4]) && p[5] == '>';
}

}  // namespace

Vocabulary read_tokenizer_bin(const std::string &path, int vocab_size) {
  MappedFile file(path);
  ByteReader r(file.bytes(), path);
  int32_t max_len = r.read<int32_t>("max_token_length");
  if (max_len <= 0 || max_len > 1 << 16)
    throw Error(fmt::format("{}: max_token_length: expected 1..65536, found {}", path, max_len));

  Vocabulary v;
  v.bos = 1;
  v.eos = 2;
  v.unk = 0;
  v.eot = 1;  // llama2.c models end a text by producing BOS, and generation stops there
  for (int i = 0; vocab_size < 0 ? r.remaining() > 0 : i < vocab_size; ++i) {
    std::string field = fmt::format("token {}", i);
    float score = r.read<float>(field + " score");
    int32_t len = r.read<int32_t>(field + " length");
    if (len < 0 || len > max_len)
      throw Error(fmt::format("{}: {} length: expected 0..{} (max_token_length), found {}", path, field,
                              max_len, len));
    std::string piece(r.read_bytes(uint64_t(len), field + " bytes"));
    // llama2.c's exporter writes BOS and EOS as "\n<s>\n" and "\n</s>\n"
    if ((i == 1 && piece == "\n<s>\n") || (i == 2 && piece == "\n</s>\n")) piece = piece.substr(1, piece.size() - 2);
    TokenType type = TokenType::Normal;
    if (is_byte_piece(piece)) type = TokenType::Byte;
    else if (i == 0 && piece == "<unk>") type = TokenType::Unknown;
    else if ((i == 1 && piece == "<s>") || (i == 2 && piece == "</s>")) type = TokenType::Control;
    v.pieces.push_back(std::move(piece));
    v.scores.push_back(score);
    v.types.push_back(type);
  }
  if (v.size() < 3)
    throw Error(fmt::format("{}: expected at least 3 pieces (<unk>, <s>, </s>), found {}", path, v.size()));
  return v;
}

std::unique_ptr<Tokenizer> load_tokenizer_bin(const std::string &path, int vocab_size) {
  return std::make_unique<SpmTokenizer>(read_tokenizer_bin(path, vocab_size));
}

}  // namespace kdsl::models
