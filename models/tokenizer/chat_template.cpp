// chat_template.cpp - detection of and rendering for the supported chat formats
#include "models/tokenizer/chat_template.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include "models/common/printable.h"
#include "models/gguf/gguf_file.h"

namespace kdsl::models {

namespace {

const char *kOverrideHint = "pass --chat-template with one of llama2, llama3, chatml, mistral";

std::string trim(std::string_view s) {
  size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string_view::npos ? std::string() : std::string(s.substr(a, b - a + 1));
}

void check_role(const ChatMessage &m) {
  if (m.role != "system" && m.role != "user" && m.role != "assistant")
    throw Error(fmt::format("chat message role '{}' is not one of system, user, assistant", m.role));
}

// Llama 2 and Mistral fold the system prompt into the first user turn, and the assistant's
// turn follows [/INST] directly, so there is no separate generation prompt.
std::string render_inst(std::span<const ChatMessage> messages, bool llama2) {
  std::string out, system;
  bool first_turn = true;
  for (const ChatMessage &m : messages) {
    check_role(m);
    if (m.role == "system") {
      system = trim(m.content);
    } else if (m.role == "user") {
      std::string user = trim(m.content);
      if (!system.empty()) {
        user = llama2 ? fmt::format("<<SYS>>\n{}\n<</SYS>>\n\n{}", system, user) : system + "\n\n" + user;
        system.clear();
      }
      if (!first_turn && llama2) out += "<s>";
      out += fmt::format("[INST] {} [/INST]", user);
      first_turn = false;
    } else {
      out += llama2 ? fmt::format(" {} </s>", trim(m.content)) : trim(m.content) + "</s>";
    }
  }
  return out;
}

}  // namespace

std::optional<ChatTemplate> parse_chat_template_name(std::string_view name) {
  for (ChatTemplate t : {ChatTemplate::Llama2, ChatTemplate::Llama3, ChatTemplate::ChatML, ChatTemplate::Mistral})
    if (chat_template_name(t) == name) return t;
  return std::nullopt;
}

std::string_view chat_template_name(ChatTemplate t) {
  switch (t) {
    case ChatTemplate::Llama2: return "llama2";
    case ChatTemplate::Llama3: return "llama3";
    case ChatTemplate::ChatML: return "chatml";
    case ChatTemplate::Mistral: return "mistral";
  }
  return "?";
}

std::optional<ChatTemplate> detect_chat_template(std::string_view jinja) {
  auto has = [&](std::string_view s) { return jinja.find(s) != std::string_view::npos; };
  if (has("<|im_start|>")) return ChatTemplate::ChatML;
  if (has("<|start_header_id|>") && has("<|end_header_id|>")) return ChatTemplate::Llama3;
  if (has("[INST]")) return has("<<SYS>>") ? ChatTemplate::Llama2 : ChatTemplate::Mistral;
  return std::nullopt;
}

ChatTemplate select_chat_template(const GgufFile &f, const std::string &override_name) {
  if (!override_name.empty()) {
    if (auto t = parse_chat_template_name(override_name)) return *t;
    throw Error(fmt::format("--chat-template '{}' is not a known template: {}", override_name, kOverrideHint));
  }
  auto source = f.find_string("tokenizer.chat_template");
  if (!source) throw Error(fmt::format("{}: the model has no tokenizer.chat_template; {}", f.path(), kOverrideHint));
  if (auto t = detect_chat_template(*source)) return *t;
  throw Error(fmt::format("{}: tokenizer.chat_template is not a template kdsl recognises (it begins \"{}\"); {}",
                          f.path(), printable(*source, 40), kOverrideHint));
}

std::string render_chat(ChatTemplate t, std::span<const ChatMessage> messages, bool add_generation_prompt) {
  std::string out;
  switch (t) {
    case ChatTemplate::ChatML:
      for (const ChatMessage &m : messages) {
        check_role(m);
        out += fmt::format("<|im_start|>{}\n{}<|im_end|>\n", m.role, m.content);
      }
      if (add_generation_prompt) out += "<|im_start|>assistant\n";
      return out;
    case ChatTemplate::Llama3:
      for (const ChatMessage &m : messages) {
        check_role(m);
        out += fmt::format("<|start_header_id|>{}<|end_header_id|>\n\n{}<|eot_id|>", m.role, trim(m.content));
      }
      if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
      return out;
    case ChatTemplate::Llama2: return render_inst(messages, true);
    case ChatTemplate::Mistral: return render_inst(messages, false);
  }
  return out;
}

}  // namespace kdsl::models
