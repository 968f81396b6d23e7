// stream_decoder.cpp - holds back the incomplete tail of the decoded bytes until a later token finishes it
#include "models/tokenizer/stream_decoder.h"

#include <utility>

#include "models/tokenizer/utf8.h"

namespace kdsl::models {

std::string StreamDecoder::push(int token) {
  std::string piece = tokenizer_.token_to_piece(token);
  if (piece.empty()) return {};
  if (at_start_ && tokenizer_.strips_leading_space() && piece[0] == ' ') piece.erase(0, 1);
  at_start_ = false;
  pending_ += piece;
  size_t hold = utf8_incomplete_tail(pending_);
  std::string ready = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return ready;
}

std::string StreamDecoder::flush() { return std::exchange(pending_, std::string()); }

}  // namespace kdsl::models
