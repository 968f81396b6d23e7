// tokenizer.h - the tokenizer interface the engine uses, and the factories that build one from a model file
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/tokenizer/vocabulary.h"

namespace kdsl::models {

class GgufFile;

enum class TokenizerKind { SentencePiece, ByteLevelBpe };

class Tokenizer {
 public:
  // Throws kdsl::Error when a byte-type token is not spelled <0xHH> (the caller adds the file).
  explicit Tokenizer(Vocabulary vocab);
  virtual ~Tokenizer() = default;

  virtual TokenizerKind kind() const = 0;

  // Token ids of `text`, BOS first when `add_bos` and the vocabulary has one. With
  // `parse_special`, control and user-defined tokens written in the text (`<|im_start|>`) are
  // matched first and never split; the text between them is tokenized normally.
  std::vector<int> encode(std::string_view text, bool add_bos, bool parse_special = true) const;

  // The bytes token `id` prints as. Control tokens print nothing unless `render_special`.
  // A byte-fallback token is one raw byte, so a piece may be part of a UTF-8 character.
  std::string token_to_piece(int id, bool render_special = false) const;

  // The text of `ids`, dropping control tokens and the leading space SentencePiece adds.
  std::string decode(std::span<const int> ids) const;

  const Vocabulary &vocab() const { return vocab_; }
  int vocab_size() const { return vocab_.size(); }
  int bos_id() const { return vocab_.bos; }
  int eos_id() const { return vocab_.eos; }
  // Whether generating `id` ends the turn (EOS or end-of-turn).
  bool is_end_of_generation(int id) const { return id >= 0 && (id == vocab_.eos || id == vocab_.eot); }
  // The id of a piece given as its text, or -1.
  int find_piece(std::string_view piece) const;
  // Whether decoding drops one leading space at the start of the text (SentencePiece's dummy prefix).
  bool strips_leading_space() const { return kind() == TokenizerKind::SentencePiece && vocab_.add_space_prefix; }

 protected:
  // Appends the ids of `text`, which holds no special tokens; `at_start` says whether it opens
  // the input or follows a special token (where SentencePiece adds its dummy prefix).
  virtual void encode_text(std::string_view text, bool at_start, std::vector<int> &out) const = 0;

  Vocabulary vocab_;
  PieceMap piece_to_id_;

 private:
  // Control and user-defined ids by their first byte, longest first, for matching in text.
  std::vector<std::vector<int>> specials_by_first_byte_;
};

// The byte a byte-fallback piece stands for ("<0x0A>" is 10; either case of hex digit), or
// nullopt when `piece` is not spelled so.
std::optional<uint8_t> byte_piece_value(std::string_view piece);

// A llama2.c tokenizer.bin (SentencePiece pieces and scores); `vocab_size` < 0 reads to the end.
std::unique_ptr<Tokenizer> load_tokenizer_bin(const std::string &path, int vocab_size = -1);

// The tokenizer a GGUF file describes in its tokenizer.ggml.* metadata: model `llama`
// (SentencePiece) or `gpt2` (byte-level BPE, pre-tokenizer from tokenizer.ggml.pre).
std::unique_ptr<Tokenizer> load_tokenizer(const GgufFile &gguf);

}  // namespace kdsl::models
