// vocabulary.h - a tokenizer's pieces, scores, token types and special ids, shared by every tokenizer kind
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kdsl::models {

// GGUF's tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

// std::string keys looked up by std::string_view without copying.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using PieceMap = std::unordered_map<std::string, int, StringHash, std::equal_to<>>;

// Pieces are stored as the text they stand for: SentencePiece's U+2581 is already a space and
// byte-level BPE pieces are already raw bytes, so lookups and decoding need no translation.
struct Vocabulary {
  std::vector<std::string> pieces;
  std::vector<float> scores;  // SentencePiece merge priority; empty for BPE
  std::vector<TokenType> types;
  int bos = -1, eos = -1, eot = -1, unk = -1, pad = -1;
  bool add_bos = true;
  bool add_eos = false;
  bool add_space_prefix = true;  // SentencePiece's dummy prefix

  int size() const { return static_cast<int>(pieces.size()); }
  TokenType type(int id) const { return types.empty() ? TokenType::Normal : types[size_t(id)]; }
};

}  // namespace kdsl::models
