// unicode.h - the Unicode classes byte-level BPE pre-tokenizers need: letters, numbers, white space
#pragma once
#include <cstddef>
#include <cstdint>

namespace kdsl::models {

struct CodePointRange {
  uint32_t first, last;
};

bool is_letter(uint32_t cp);      // \p{L}
bool is_number(uint32_t cp);      // \p{N}
bool is_whitespace(uint32_t cp);  // \s (the White_Space property)

namespace unicode_tables {
extern const CodePointRange kLetterRanges[];
extern const size_t kLetterRangesCount;
extern const CodePointRange kNumberRanges[];
extern const size_t kNumberRangesCount;
extern const CodePointRange kWhitespaceRanges[];
extern const size_t kWhitespaceRangesCount;
}  // namespace unicode_tables

}  // namespace kdsl::models
