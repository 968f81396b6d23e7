// tokenizer_bin.h - the llama2.c tokenizer.bin format: max token length, then score + length + bytes per piece
#pragma once
#include <string>

#include "models/tokenizer/vocabulary.h"

namespace kdsl::models {

// Reads `vocab_size` entries, or every entry up to the end of the file when it is negative
// (the format does not store its own size). Token types follow llama2.c's conventions:
// `<unk>` is unknown, `<s>`/`</s>` are control (BOS 1, EOS 2), `<0xXX>` pieces are bytes.
Vocabulary read_tokenizer_bin(const std::string &path, int vocab_size = -1);

}  // namespace kdsl::models
