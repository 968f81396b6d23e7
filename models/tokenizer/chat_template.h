// chat_template.h - renders conversations in the chat formats of Llama 2, Llama 3, ChatML (Qwen, SmolLM) and Mistral
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace kdsl::models {

class GgufFile;

enum class ChatTemplate { Llama2, Llama3, ChatML, Mistral };

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

// "llama2", "llama3", "chatml", "mistral"; nullopt otherwise.
std::optional<ChatTemplate> parse_chat_template_name(std::string_view name);
std::string_view chat_template_name(ChatTemplate t);

// Recognises a Jinja chat template (tokenizer.chat_template) by the markers it emits, as
// llama.cpp does; nullopt when it matches none of the four formats.
std::optional<ChatTemplate> detect_chat_template(std::string_view jinja);

// The template for a model: `override_name` (the --chat-template option) when given, else
// the one tokenizer.chat_template is recognised as. A missing or unknown template, or an
// unknown override, throws kdsl::Error naming the --chat-template option and its values.
ChatTemplate select_chat_template(const GgufFile &gguf, const std::string &override_name = "");

// The prompt text for `messages`, ending with the assistant's header when
// `add_generation_prompt`. The first BOS is left to the tokenizer (add_bos); special tokens
// in the text are meant to be parsed by Tokenizer::encode(..., parse_special = true).
std::string render_chat(ChatTemplate t, std::span<const ChatMessage> messages, bool add_generation_prompt = true);

}  // namespace kdsl::models
