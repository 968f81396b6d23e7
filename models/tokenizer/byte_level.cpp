// byte_level.cpp - the bytes_to_unicode table of GPT-2's encoder.py, computed once
#include "models/tokenizer/byte_level.h"

#include <array>

#include "models/tokenizer/utf8.h"

namespace kdsl::models {

namespace {

struct Table {
  std::array<uint32_t, 256> to_code_point{};
  std::array<int, 512> to_byte{};  // code points below 512 cover the whole image
  Table() {
    to_byte.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      to_code_point[size_t(b)] = printable ? uint32_t(b) : uint32_t(next++);
      to_byte[to_code_point[size_t(b)]] = b;
    }
  }
};

const Table &table() {
  static const Table t;
  return t;
}

}  // namespace

std::string byte_to_unicode(uint8_t byte) {
  std::string s;
  utf8_append(s, table().to_code_point[byte]);
  return s;
}

std::string bytes_to_unicode(std::string_view bytes) {
  std::string s;
  s.reserve(bytes.size() * 2);
  for (char c : bytes) utf8_append(s, table().to_code_point[uint8_t(c)]);
  return s;
}

std::optional<std::string> unicode_to_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t n;
    uint32_t cp = utf8_decode(text, i, &n);
    if (cp >= 512 || table().to_byte[cp] < 0) return std::nullopt;
    out += char(table().to_byte[cp]);
    i += n;
  }
  return out;
}

}  // namespace kdsl::models
