// printable_test.cpp - file-derived strings in messages: control bytes and bad UTF-8 escaped, long ones cut
#include <doctest/doctest.h>

#include <string>

#include "models/common/printable.h"

using kdsl::models::printable;

TEST_CASE("printable: terminal escapes, C1 controls, bad UTF-8 and backslashes become \\xNN") {
  CHECK(printable("llama") == "llama");
  CHECK(printable("\x1b]0;pwned\x07\x1b[2J") == "\\x1b]0;pwned\\x07\\x1b[2J");
  CHECK(printable(std::string("a\0b\n\x7f", 5)) == "a\\x00b\\x0a\\x7f");
  CHECK(printable("\xC2\x9B" "2J") == "\\xc2\\x9b2J");  // U+009B, the one-character CSI
  CHECK(printable("h\xC3\xA9llo \xE2\x96\x81 \xF0\x9F\x98\x80") == "h\xC3\xA9llo \xE2\x96\x81 \xF0\x9F\x98\x80");
  CHECK(printable("\xFF\xC3") == "\\xff\\xc3");              // a stray byte, a sequence cut short
  CHECK(printable("\xC0\xAF") == "\\xc0\\xaf");              // overlong
  CHECK(printable("\xED\xA0\x80") == "\\xed\\xa0\\x80");     // a surrogate
  CHECK(printable("a\\x1b") == "a\\x5cx1b");                // an escape in the output is always ours
}

TEST_CASE("printable: long strings are cut at a character boundary and say their length") {
  CHECK(printable(std::string(200, 'a')) == std::string(120, 'a') + "... (200 bytes)");
  CHECK(printable(std::string(10, 'a'), 4) == "aaaa... (10 bytes)");
  CHECK(printable("ab\xC3\xA9z", 3) == "ab... (5 bytes)");  // é is not split
  CHECK(printable("abc", 3) == "abc");
}
