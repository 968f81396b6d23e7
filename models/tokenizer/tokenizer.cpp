// tokenizer.cpp - what every tokenizer shares: special-token matching, pieces, decoding
#include "models/tokenizer/tokenizer.h"

#include <algorithm>
#include <fmt/format.h>
#include <kdsl/error.h>

#include "models/common/printable.h"

namespace kdsl::models {

std::optional<uint8_t> byte_piece_value(std::string_view piece) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (piece.size() != 6 || !piece.starts_with("<0x") || piece[5] != '>') return std::nullopt;
  int hi = hex(piece[3]), lo = hex(piece[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return uint8_t(hi * 16 + lo);
}

Tokenizer::Tokenizer(Vocabulary vocab) : vocab_(std::move(vocab)), specials_by_first_byte_(256) {
  piece_to_id_.reserve(vocab_.pieces.size());
  for (int id = 0; id < vocab_.size(); ++id) {
    // The first of two equal pieces wins, as in SentencePiece and llama.cpp.
    piece_to_id_.emplace(vocab_.pieces[size_t(id)], id);
    TokenType t = vocab_.type(id);
    const std::string &p = vocab_.pieces[size_t(id)];
    if (t == TokenType::Byte && !byte_piece_value(p))
      throw Error(fmt::format("tokenizer: token {} '{}' has type byte but is not spelled <0x00> .. <0xFF>", id,
                              printable(p)));
    if ((t == TokenType::Control || t == TokenType::UserDefined) && !p.empty())
      specials_by_first_byte_[uint8_t(p[0])].push_back(id);
  }
  for (auto &ids : specials_by_first_byte_)
    std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) {
      return vocab_.pieces[size_t(a)].size() > vocab_.pieces[size_t(b)].size();
    });
}

int Tokenizer::find_piece(std::string_view piece) const {
  auto it = piece_to_id_.find(piece);
  return it == piece_to_id_.end() ? -1 : it->second;
}

std::vector<int> Tokenizer::encode(std::string_view text, bool add_bos, bool parse_special) const {
  std::vector<int> out;
  if (add_bos && vocab_.bos >= 0) out.push_back(vocab_.bos);
  bool at_start = true;
  size_t begin = 0;  // start of the plain text not yet encoded
  for (size_t i = 0; parse_special && i < text.size();) {
    int match = -1;
    for (int id : specials_by_first_byte_[uint8_t(text[i])]) {
      const std::string &p = vocab_.pieces[size_t(id)];
      if (text.compare(i, p.size(), p) == 0) {
        match = id;
        break;
      }
    }
    if (match < 0) {
      ++i;
      continue;
    }
    if (i > begin) encode_text(text.substr(begin, i - begin), at_start, out);
    out.push_back(match);
    at_start = true;
    i += vocab_.pieces[size_t(match)].size();
    begin = i;
  }
  if (begin < text.size()) encode_text(text.substr(begin), at_start, out);
  return out;
}

std::string Tokenizer::token_to_piece(int id, bool render_special) const {
  if (id < 0 || id >= vocab_.size())
    throw Error(fmt::format("token id {} is out of range: the vocabulary has {} tokens", id, vocab_.size()));
  const std::string &p = vocab_.pieces[size_t(id)];
  switch (vocab_.type(id)) {
    case TokenType::Control:
    case TokenType::Unused:
      return render_special ? p : std::string();
    case TokenType::Byte:
      // The constructor has checked the spelling ("<0x0A>" stands for one byte).
      return std::string(1, char(*byte_piece_value(p)));
    default:
      return p;
  }
}

std::string Tokenizer::decode(std::span<const int> ids) const {
  std::string text;
  bool at_start = true;
  for (int id : ids) {
    std::string piece = token_to_piece(id);
    if (piece.empty()) continue;
    if (at_start && strips_leading_space() && piece[0] == ' ') piece.erase(0, 1);
    at_start = false;
    text += piece;
  }
  return text;
}

}  // namespace kdsl::models
