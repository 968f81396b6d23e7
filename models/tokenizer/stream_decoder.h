// stream_decoder.h - turns generated tokens into printable text one token at a time, never splitting a UTF-8 character
#pragma once
#include <string>

#include "models/tokenizer/tokenizer.h"

namespace kdsl::models {

// Byte-fallback and byte-level tokens can end in the middle of a character ("é" may be two
// tokens). push() returns only whole characters; the bytes of an unfinished one wait for
// the tokens that complete it. Malformed bytes are passed through rather than held forever.
class StreamDecoder {
 public:
  // at_text_start: whether the first token pushed begins the text. SentencePiece's dummy-prefix
  // space is dropped only there; tokens generated after a prompt continue its text, and the
  // space of " of" after "The river" is a real one.
  explicit StreamDecoder(const Tokenizer &tokenizer, bool at_text_start = true) : tokenizer_(tokenizer), at_start_(at_text_start) {}

  // The text that became printable with `token` (possibly empty).
  std::string push(int token);
  // What is still held back at the end of generation: an incomplete character's bytes.
  std::string flush();

 private:
  const Tokenizer &tokenizer_;
  std::string pending_;
  bool at_start_;
};

}  // namespace kdsl::models
