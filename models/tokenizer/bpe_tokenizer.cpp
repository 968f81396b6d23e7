// bpe_tokenizer.cpp - byte-level BPE encoding with a priority queue of ranked merges per word
#include "models/tokenizer/bpe_tokenizer.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include <queue>

#include "models/common/printable.h"
#include "models/tokenizer/byte_level.h"

namespace kdsl::models {

BpeTokenizer::BpeTokenizer(Vocabulary vocab, const std::vector<std::string> &merges, BpeOptions options)
    : Tokenizer(std::move(vocab)), options_(options) {
  for (int b = 0; b < 256; ++b) {
    int id = find_piece(std::string(1, char(b)));
    byte_ids_[size_t(b)] = id >= 0 && vocab_.type(id) != TokenType::Control ? id : vocab_.unk;
  }
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string &m = merges[rank];
    size_t space = m.find(' ', 1);  // the left side is never empty, so a space at 0 is part of no merge
    auto left = space == std::string::npos ? std::nullopt : unicode_to_bytes(std::string_view(m).substr(0, space));
    auto right = space == std::string::npos ? std::nullopt : unicode_to_bytes(std::string_view(m).substr(space + 1));
    if (!left || !right || left->empty() || right->empty())
      throw Error(fmt::format("BPE tokenizer: merge {} '{}': expected two byte-level tokens separated by a space", rank, printable(m)));
    int l = find_piece(*left), r = find_piece(*right), result = find_piece(*left + *right);
    if (l < 0 || r < 0 || result < 0)
      throw Error(fmt::format("BPE tokenizer: merge {} '{}' uses or makes a token missing from the vocabulary", rank, printable(m)));
    merges_.emplace(uint64_t(uint32_t(l)) << 32 | uint32_t(r), Merge{int(rank), result});  // first rank wins
  }
}

void BpeTokenizer::encode_text(std::string_view text, bool, std::vector<int> &out) const {
  for (std::string_view word : pre_tokenize(options_.pre, text)) encode_word(word, out);
}

namespace {

struct Symbol {
  int id;
  int prev, next;
};

struct Candidate {
  int rank, left, right, result;
  int left_id, right_id;  // the ids when queued: a stale entry no longer matches
  bool operator<(const Candidate &o) const { return rank > o.rank || (rank == o.rank && left > o.left); }
};

}  // namespace

void BpeTokenizer::encode_word(std::string_view word, std::vector<int> &out) const {
  if (options_.ignore_merges) {
    int id = find_piece(word);
    if (id >= 0 && vocab_.type(id) == TokenType::Normal) {
      out.push_back(id);
      return;
    }
  }
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  for (char c : word) {
    int id = byte_ids_[uint8_t(c)];
    if (id < 0)
      throw Error(fmt::format("BPE tokenizer: byte 0x{:02X} has no token and the vocabulary has no unknown token",
                              uint8_t(c)));
    int index = int(symbols.size());
    symbols.push_back({id, index - 1, index + 1});
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  std::priority_queue<Candidate> queue;
  auto try_pair = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    int a = symbols[size_t(left)].id, b = symbols[size_t(right)].id;
    auto it = merges_.find(uint64_t(uint32_t(a)) << 32 | uint32_t(b));
    if (it != merges_.end()) queue.push({it->second.rank, left, right, it->second.result, a, b});
  };
  for (int i = 0; i + 1 < int(symbols.size()); ++i) try_pair(i, i + 1);

  while (!queue.empty()) {
    Candidate c = queue.top();
    queue.pop();
    Symbol &l = symbols[size_t(c.left)], &r = symbols[size_t(c.right)];
    if (l.id != c.left_id || r.id != c.right_id || l.next != c.right) continue;  // stale
    l.id = c.result;
    l.next = r.next;
    if (r.next >= 0) symbols[size_t(r.next)].prev = c.left;
    r.id = -1;
    try_pair(l.prev, c.left);
    try_pair(c.left, l.next);
  }
  for (int i = 0; i >= 0; i = symbols[size_t(i)].next) out.push_back(symbols[size_t(i)].id);
}

}  // namespace kdsl::models
