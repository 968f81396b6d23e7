// printable.h - file-derived text made safe to print in an error message (no terminal escapes, bounded length)
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace kdsl::models {

// `s` with every control character (bytes below 0x20, 0x7f, U+0080..U+009F), every byte of
// invalid UTF-8 and the backslash itself written as \xNN, so a model file cannot move the
// cursor, set the terminal title or clear the screen through our messages, and an escape
// in the output always means an escaped byte. Other valid UTF-8 passes unchanged. A string
// longer than `max_bytes` is cut at a character boundary and ends with "... (N bytes)".
std::string printable(std::string_view s, size_t max_bytes = 120);

}  // namespace kdsl::models
