// pre_tokenizer.cpp - the pre-tokenizer regexes written out as scanners over code points
#include "models/tokenizer/pre_tokenizer.h"

#include <cctype>

#include "models/tokenizer/unicode.h"
#include "models/tokenizer/utf8.h"

namespace kdsl::models {

std::optional<PreTokenizer> parse_pre_tokenizer(std::string_view name) {
  if (name == "default" || name == "gpt-2" || name == "gpt2") return PreTokenizer::Gpt2;
  if (name == "llama-bpe" || name == "llama3") return PreTokenizer::Llama3;
  if (name == "qwen2") return PreTokenizer::Qwen2;
  if (name == "smollm") return PreTokenizer::SmolLM;
  return std::nullopt;
}

namespace {

struct Char {
  uint32_t cp;
  size_t offset;  // byte offset in the text
};

constexpr uint32_t kInvalid = 0xFFFFFFFF;  // a malformed byte: its own class

class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {
    for (size_t i = 0; i < text.size();) {
      size_t n;
      uint32_t cp = utf8_decode(text, i, &n);
      if (cp == 0xFFFD && n == 1) cp = kInvalid;  // a real U+FFFD is 3 bytes long
      chars_.push_back({cp, i});
      i += n;
    }
  }

  size_t size() const { return chars_.size(); }
  uint32_t at(size_t i) const { return i < chars_.size() ? chars_[i].cp : 0; }
  bool letter(size_t i) const { return i < size() && at(i) != kInvalid && is_letter(at(i)); }
  bool number(size_t i) const { return i < size() && at(i) != kInvalid && is_number(at(i)); }
  bool space(size_t i) const { return i < size() && at(i) != kInvalid && is_whitespace(at(i)); }
  bool other(size_t i) const { return i < size() && !letter(i) && !number(i) && !space(i); }  // [^\s\p{L}\p{N}]
  bool newline(size_t i) const { return i < size() && (at(i) == '\r' || at(i) == '\n'); }

  std::string_view slice(size_t from, size_t to) const {
    size_t a = chars_[from].offset, b = to < size() ? chars_[to].offset : text_.size();
    return text_.substr(a, b - a);
  }

  // Length of 's|'t|'re|'ve|'m|'ll|'d at i (0 if none), optionally ignoring case.
  size_t contraction(size_t i, bool ignore_case) const {
    if (at(i) != '\'') return 0;
    auto is = [&](size_t k, char c) {
      uint32_t x = at(k);
      if (ignore_case && x < 0x80) x = uint32_t(std::tolower(int(x)));
      return k < size() && x == uint32_t(c);
    };
    if (is(i + 1, 's') || is(i + 1, 't') || is(i + 1, 'm') || is(i + 1, 'd')) return 2;
    if ((is(i + 1, 'r') && is(i + 2, 'e')) || (is(i + 1, 'v') && is(i + 2, 'e')) || (is(i + 1, 'l') && is(i + 2, 'l')))
      return 3;
    return 0;
  }

  // \s+(?!\S)|\s+ at i (a white-space run): the run, less its last character when a
  // non-space follows and the run is longer than one.
  size_t trailing_space(size_t i) const {
    size_t end = i;
    while (space(end)) ++end;
    if (end < size() && end - i > 1) return end - i - 1;
    return end - i;
  }

 private:
  std::string_view text_;
  std::vector<Char> chars_;
};

size_t match_gpt2(const Scanner &s, size_t i) {
  if (size_t n = s.contraction(i, false)) return n;
  size_t j = i + (s.at(i) == ' ' ? 1 : 0);
  auto run = [&](auto pred) {
    size_t k = j;
    while (pred(k)) ++k;
    return k - i;
  };
  if (s.letter(j)) return run([&](size_t k) { return s.letter(k); });
  if (s.number(j)) return run([&](size_t k) { return s.number(k); });
  if (s.other(j)) return run([&](size_t k) { return s.other(k); });
  return s.trailing_space(i);
}

size_t match_llama3(const Scanner &s, size_t i, size_t max_digits) {
  if (size_t n = s.contraction(i, true)) return n;
  // [^\r\n\p{L}\p{N}]?\p{L}+
  size_t j = (!s.newline(i) && !s.letter(i) && !s.number(i) && s.letter(i + 1)) ? i + 1 : i;
  if (s.letter(j)) {
    while (s.letter(j)) ++j;
    return j - i;
  }
  // \p{N}{1,3} or \p{N}
  if (s.number(i)) {
    size_t k = i;
    while (s.number(k) && k - i < max_digits) ++k;
    return k - i;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  j = i + (s.at(i) == ' ' ? 1 : 0);
  if (s.other(j)) {
    while (s.other(j)) ++j;
    while (s.newline(j)) ++j;
    return j - i;
  }
  // \s*[\r\n]+ : the white-space run up to and including its last newline
  size_t end = i, last_newline = 0;
  bool has_newline = false;
  while (s.space(end)) {
    if (s.newline(end)) has_newline = true, last_newline = end;
    ++end;
  }
  if (has_newline) return last_newline + 1 - i;
  return s.trailing_space(i);
}

}  // namespace

std::vector<std::string_view> pre_tokenize(PreTokenizer kind, std::string_view text) {
  std::vector<std::string_view> words;
  if (kind == PreTokenizer::SmolLM) {
    // Digits split first, so the GPT-2 regex sees the text between them as separate pieces
    // (a space before a digit stays with the text before it).
    size_t begin = 0;
    for (size_t i = 0, n = 0; i < text.size(); i += n) {
      uint32_t cp = utf8_decode(text, i, &n);
      if ((cp == 0xFFFD && n == 1) || !is_number(cp)) continue;
      for (std::string_view w : pre_tokenize(PreTokenizer::Gpt2, text.substr(begin, i - begin))) words.push_back(w);
      words.push_back(text.substr(i, n));
      begin = i + n;
    }
    for (std::string_view w : pre_tokenize(PreTokenizer::Gpt2, text.substr(begin))) words.push_back(w);
    return words;
  }
  Scanner s(text);
  for (size_t i = 0; i < s.size();) {
    size_t n = kind == PreTokenizer::Gpt2     ? match_gpt2(s, i)
               : kind == PreTokenizer::Llama3 ? match_llama3(s, i, 3)
                                              : match_llama3(s, i, 1);
    if (n == 0) n = 1;  // unreachable for well-formed scanners; never loop forever
    words.push_back(s.slice(i, i + n));
    i += n;
  }
  return words;
}

}  // namespace kdsl::models
