// spm_tokenizer.h - SentencePiece-style BPE: merge the best-scoring adjacent pair first, bytes as fallback
#pragma once
#include <array>

#include "models/tokenizer/tokenizer.h"

namespace kdsl::models {

// SentencePiece BPE as llama2.c and llama.cpp run it. The text (with a leading space, the
// "dummy prefix") starts as one symbol per UTF-8 character; the adjacent pair whose joined
// text is a vocabulary piece with the highest score merges first, leftmost on ties, until no
// pair is a piece. A symbol that is not a piece becomes its bytes' `<0xXX>` tokens.
class SpmTokenizer final : public Tokenizer {
 public:
  explicit SpmTokenizer(Vocabulary vocab);
  TokenizerKind kind() const override { return TokenizerKind::SentencePiece; }

 protected:
  void encode_text(std::string_view text, bool at_start, std::vector<int> &out) const override;

 private:
  int mergeable_id(std::string_view piece) const;
  std::array<int, 256> byte_ids_{};
};

}  // namespace kdsl::models
