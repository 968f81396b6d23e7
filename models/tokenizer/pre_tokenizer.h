// pre_tokenizer.h - splits text into words before byte-level BPE, as the GPT-2, Llama 3 and Qwen2 regexes do
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kdsl::models {

// Each kind is one regex, hand-compiled (as llama.cpp does) so no regex engine is needed:
//   Gpt2:   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   Llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//           ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   Qwen2:  as Llama3 with \p{N} (one digit per word) instead of \p{N}{1,3}
//   SmolLM: every digit a word of its own (HF's Digits(individual_digits)), then Gpt2 on the rest
enum class PreTokenizer { Gpt2, Llama3, Qwen2, SmolLM };

// tokenizer.ggml.pre values: "default", "gpt-2"/"gpt2", "llama-bpe"/"llama3", "qwen2", "smollm".
std::optional<PreTokenizer> parse_pre_tokenizer(std::string_view name);

// The words of `text`, in order; their concatenation is `text`. Malformed UTF-8 bytes are
// treated as characters of their own that are neither letters, numbers nor space.
std::vector<std::string_view> pre_tokenize(PreTokenizer kind, std::string_view text);

}  // namespace kdsl::models
