// printable.cpp - escapes control bytes and invalid UTF-8 in file-derived strings before they reach a terminal
#include "models/common/printable.h"

#include <fmt/format.h>

namespace kdsl::models {

namespace {

// Length of the valid UTF-8 sequence at s[i] (1..4), or 0 when it is not one. C1 control
// characters (U+0080..U+009F) count as invalid: terminals act on them too.
size_t utf8_length(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return uint8_t(s[k]); };
  auto cont = [&](size_t k) { return k < s.size() && (byte(k) & 0xC0) == 0x80; };
  uint8_t b = byte(i);
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return cont(i + 1) && !(b == 0xC2 && byte(i + 1) < 0xA0) ? 2 : 0;
  if (b >= 0xE0 && b <= 0xEF) {
    if (!cont(i + 1) || !cont(i + 2)) return 0;
    if (b == 0xE0 && byte(i + 1) < 0xA0) return 0;  // overlong
    if (b == 0xED && byte(i + 1) >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (b >= 0xF0 && b <= 0xF4) {
    if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    if (b == 0xF0 && byte(i + 1) < 0x90) return 0;  // overlong
    if (b == 0xF4 && byte(i + 1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

std::string printable(std::string_view s, size_t max_bytes) {
  std::string out;
  size_t i = 0;
  while (i < s.size() && i < max_bytes) {
    size_t n = utf8_length(s, i);
    uint8_t b = uint8_t(s[i]);
    if (n == 0 || b < 0x20 || b == 0x7F || b == '\\') {
      out += fmt::format("\\x{:02x}", b);
      ++i;
    } else {
      if (i + n > max_bytes) break;  // never cut a character in half
      out.append(s.substr(i, n));
      i += n;
    }
  }
  if (i < s.size()) out += fmt::format("... ({} bytes)", s.size());
  return out;
}

}  // namespace kdsl::models
