// utf8.cpp - strict UTF-8 decoding: overlong forms, surrogates and stray continuations are malformed
#include "models/tokenizer/utf8.h"

namespace kdsl::models {

namespace {

// Expected sequence length from the lead byte; 0 for a byte that cannot start one.
size_t lead_length(uint8_t b) {
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) return 3;
  if (b >= 0xF0 && b <= 0xF4) return 4;
  return 0;
}

bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

}  // namespace

uint32_t utf8_decode(std::string_view text, size_t i, size_t *length) {
  uint8_t b0 = uint8_t(text[i]);
  size_t n = lead_length(b0);
  *length = 1;
  if (n == 1) return b0;
  if (n == 0 || i + n > text.size()) return 0xFFFD;
  uint32_t cp = b0 & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    uint8_t b = uint8_t(text[i + k]);
    if (!is_continuation(b)) return 0xFFFD;
    cp = (cp << 6) | (b & 0x3F);
  }
  bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0xFFFD;
  *length = n;
  return cp;
}

size_t utf8_sequence_length(std::string_view text, size_t i) {
  size_t n;
  utf8_decode(text, i, &n);
  return n;
}

void utf8_append(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

size_t utf8_incomplete_tail(std::string_view text) {
  // Look back at most 3 bytes for a lead byte whose sequence runs past the end.
  for (size_t back = 1; back <= 3 && back <= text.size(); ++back) {
    uint8_t b = uint8_t(text[text.size() - back]);
    if (is_continuation(b)) continue;
    size_t n = lead_length(b);
    return n > back ? back : 0;
  }
  return 0;
}

}  // namespace kdsl::models
