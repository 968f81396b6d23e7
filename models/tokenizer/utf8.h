// utf8.h - UTF-8 decoding helpers shared by the tokenizers and the streaming decoder
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace kdsl::models {

// Length of the UTF-8 sequence starting at text[i], at least 1. A malformed or truncated
// sequence counts as one byte, so every input splits into symbols.
size_t utf8_sequence_length(std::string_view text, size_t i);

// The code point at text[i] and its length; malformed bytes decode as U+FFFD of length 1.
uint32_t utf8_decode(std::string_view text, size_t i, size_t *length);

void utf8_append(std::string &out, uint32_t code_point);

// How many bytes at the end of `text` are an incomplete (but so far valid) UTF-8 sequence.
size_t utf8_incomplete_tail(std::string_view text);

}  // namespace kdsl::models
