// spm_tokenizer.cpp - SentencePiece BPE encoding with a priority queue of candidate merges
#include "models/tokenizer/spm_tokenizer.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include <queue>

#include "models/tokenizer/utf8.h"

namespace kdsl::models {

SpmTokenizer::SpmTokenizer(Vocabulary vocab) : Tokenizer(std::move(vocab)) {
  if (vocab_.scores.size() != vocab_.pieces.size())
    throw Error(fmt::format("SentencePiece tokenizer: expected one score per piece ({} pieces), found {} scores",
                            vocab_.pieces.size(), vocab_.scores.size()));
  for (int b = 0; b < 256; ++b) {
    int id = find_piece(fmt::format("<0x{:02X}>", b));
    byte_ids_[size_t(b)] = id >= 0 && vocab_.type(id) == TokenType::Byte ? id : vocab_.unk;
  }
}

int SpmTokenizer::mergeable_id(std::string_view piece) const {
  int id = find_piece(piece);
  if (id < 0) return -1;
  TokenType t = vocab_.type(id);
  return t == TokenType::Normal || t == TokenType::UserDefined ? id : -1;
}

namespace {

struct Symbol {
  int prev, next;
  size_t begin, size;  // bytes of the text; size 0 once merged into its left neighbour
};

struct Bigram {
  int left, right;
  float score;
  size_t size;  // joined size when queued: a stale entry no longer matches
  bool operator<(const Bigram &o) const { return score < o.score || (score == o.score && left > o.left); }
};

}  // namespace

void SpmTokenizer::encode_text(std::string_view fragment, bool at_start, std::vector<int> &out) const {
  std::string text;
  if (at_start && vocab_.add_space_prefix) text = " ";
  text += fragment;

  std::vector<Symbol> symbols;
  for (size_t i = 0; i < text.size();) {
    size_t n = utf8_sequence_length(text, i);
    int index = int(symbols.size());
    symbols.push_back({index - 1, index + 1, i, n});
    i += n;
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  std::priority_queue<Bigram> queue;
  auto try_pair = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol &l = symbols[size_t(left)], &r = symbols[size_t(right)];
    std::string_view joined(text.data() + l.begin, l.size + r.size);
    int id = mergeable_id(joined);
    if (id >= 0) queue.push({left, right, vocab_.scores[size_t(id)], joined.size()});
  };
  for (int i = 0; i + 1 < int(symbols.size()); ++i) try_pair(i, i + 1);

  while (!queue.empty()) {
    Bigram b = queue.top();
    queue.pop();
    Symbol &l = symbols[size_t(b.left)], &r = symbols[size_t(b.right)];
    if (l.size == 0 || r.size == 0 || l.size + r.size != b.size) continue;  // stale
    l.size += r.size;
    r.size = 0;
    l.next = r.next;
    if (r.next >= 0) symbols[size_t(r.next)].prev = b.left;
    try_pair(l.prev, b.left);
    try_pair(b.left, l.next);
  }

  for (int i = 0; i >= 0; i = symbols[size_t(i)].next) {
    std::string_view piece(text.data() + symbols[size_t(i)].begin, symbols[size_t(i)].size);
    int id = mergeable_id(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    for (char c : piece) {
      int byte_id = byte_ids_[uint8_t(c)];
      if (byte_id < 0)
        throw Error(fmt::format("SentencePiece tokenizer: byte 0x{:02X} has no <0x{:02X}> piece and the "
                                "vocabulary has no <unk> token",
                                uint8_t(c), uint8_t(c)));
      out.push_back(byte_id);
    }
  }
}

}  // namespace kdsl::models
