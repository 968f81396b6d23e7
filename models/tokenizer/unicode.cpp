// unicode.cpp - class lookups: an ASCII fast path, then binary search over the generated ranges
#include "models/tokenizer/unicode.h"

#include <algorithm>

namespace kdsl::models {

namespace {

bool in_ranges(const CodePointRange *ranges, size_t count, uint32_t cp) {
  const CodePointRange *end = ranges + count;
  const CodePointRange *it = std::upper_bound(ranges, end, cp, [](uint32_t v, const CodePointRange &r) { return v < r.first; });
  return it != ranges && cp <= (it - 1)->last;
}

}  // namespace

bool is_letter(uint32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return in_ranges(unicode_tables::kLetterRanges, unicode_tables::kLetterRangesCount, cp);
}

bool is_number(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return in_ranges(unicode_tables::kNumberRanges, unicode_tables::kNumberRangesCount, cp);
}

bool is_whitespace(uint32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= 0x09 && cp <= 0x0D);
  return in_ranges(unicode_tables::kWhitespaceRanges, unicode_tables::kWhitespaceRangesCount, cp);
}

}  // namespace kdsl::models
