// bpe_tokenizer.h - byte-level BPE (GGUF model gpt2): pre-tokenizer words, then ranked merges over bytes
#pragma once
#include <array>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/tokenizer/pre_tokenizer.h"
#include "models/tokenizer/tokenizer.h"

namespace kdsl::models {

struct BpeOptions {
  PreTokenizer pre = PreTokenizer::Gpt2;
  // A word that is itself a vocabulary token is emitted whole, skipping merges (HF's
  // ignore_merges, which Llama 3 sets).
  bool ignore_merges = false;
};

// Each pre-tokenizer word starts as one token per byte; the adjacent pair with the lowest
// merge rank merges first (leftmost on ties) until no pair has a merge. `vocab.pieces` hold
// raw bytes; `merges` are GGUF's "left right" strings in byte-level spelling, rank = index.
class BpeTokenizer final : public Tokenizer {
 public:
  BpeTokenizer(Vocabulary vocab, const std::vector<std::string> &merges, BpeOptions options);
  TokenizerKind kind() const override { return TokenizerKind::ByteLevelBpe; }
  const BpeOptions &options() const { return options_; }

 protected:
  void encode_text(std::string_view text, bool at_start, std::vector<int> &out) const override;

 private:
  void encode_word(std::string_view word, std::vector<int> &out) const;

  struct Merge {
    int rank;
    int result;
  };
  BpeOptions options_;
  std::array<int, 256> byte_ids_{};
  std::unordered_map<uint64_t, Merge> merges_;  // (left id << 32 | right id) -> rank, merged id
};

}  // namespace kdsl::models
