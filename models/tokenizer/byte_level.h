// byte_level.h - GPT-2's reversible mapping between bytes and printable Unicode characters
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kdsl::models {

// Byte-level BPE vocabularies spell every byte as a printable character: printable Latin-1
// bytes as themselves, the other 68 bytes as U+0100 onwards ("Ġ" is the space byte).
std::string byte_to_unicode(uint8_t byte);
// The UTF-8 of `bytes` with every byte mapped.
std::string bytes_to_unicode(std::string_view bytes);
// The inverse: nullopt when some character is not the image of a byte.
std::optional<std::string> unicode_to_bytes(std::string_view text);

}  // namespace kdsl::models
