// kdsl_tokenize.cpp - kdsl-tokenize: the token ids of a text, or the text of ids, for a GGUF model or a llama2.c tokenizer.bin
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <kdsl/error.h>

#include <iostream>
#include <iterator>
#include <sstream>

#include "models/gguf/gguf_file.h"
#include "models/tokenizer/chat_template.h"
#include "models/tokenizer/tokenizer.h"
#include "src/tools/tool_main.h"

using namespace kdsl::models;

namespace {

std::vector<int> parse_ids(const std::string &text) {
  std::vector<int> ids;
  std::string clean = text;
  for (char &c : clean)
    if (c == ',' || c == '[' || c == ']') c = ' ';
  std::istringstream in(clean);
  std::string word;
  while (in >> word) {
    size_t used = 0;
    int id = -1;
    try {
      id = std::stoi(word, &used);
    } catch (const std::exception &) {
    }
    if (used != word.size() || id < 0) throw kdsl::Error(fmt::format("--ids: '{}' is not a token id", word));
    ids.push_back(id);
  }
  return ids;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kdsl-tokenize: prints the token ids of a text, or with --ids the text of token ids"};
  std::string model, tokenizer_bin, text, ids_text, chat_template;
  int vocab_size = -1;
  bool no_bos = false, no_special = false, pieces = false, chat = false, read_stdin = false;
  auto *source = app.add_option_group("source", "where the vocabulary comes from");
  source->add_option("-m,--model", model, "a GGUF model (tokenizer.ggml.* metadata)");
  source->add_option("-t,--tokenizer-bin", tokenizer_bin, "a llama2.c tokenizer.bin");
  source->require_option(1);
  app.add_option("--vocab-size", vocab_size, "entries to read from tokenizer.bin (default: all)");
  app.add_option("text", text, "the text to tokenize");
  app.add_flag("--stdin", read_stdin, "read the text from standard input");
  app.add_option("--ids", ids_text, "decode these ids instead (\"1 306 4658\" or \"[1, 306]\")");
  app.add_flag("--no-bos", no_bos, "do not add the BOS token");
  app.add_flag("--no-special", no_special, "treat special-token text such as <|im_start|> as plain text");
  app.add_flag("--pieces", pieces, "print one line per token: id and piece");
  app.add_flag("--chat", chat, "wrap the text as one user message in the model's chat template");
  app.add_option("--chat-template", chat_template, "chat template to use: llama2, llama3, chatml, mistral");
  if (int status = kdsl::tools::parse_command_line(app, "kdsl-tokenize", argc, argv); status >= 0) return status;

  const std::string &subject = model.empty() ? tokenizer_bin : model;
  kdsl::tools::report_sigbus_for("kdsl-tokenize", subject);
  return kdsl::tools::run_tool("kdsl-tokenize", subject, [&] {
    std::unique_ptr<GgufFile> gguf;
    std::unique_ptr<Tokenizer> tok;
    if (!model.empty()) {
      gguf = std::make_unique<GgufFile>(model);
      tok = load_tokenizer(*gguf);
    } else {
      tok = load_tokenizer_bin(tokenizer_bin, vocab_size);
    }
    if (!ids_text.empty()) {
      std::vector<int> ids = parse_ids(ids_text);
      if (pieces) {
        for (int id : ids) fmt::print("{}\t{:?}\n", id, tok->token_to_piece(id, true));
      } else {
        fmt::print("{}\n", tok->decode(ids));
      }
      return 0;
    }
    if (read_stdin) text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    if (chat) {
      ChatTemplate t = gguf ? select_chat_template(*gguf, chat_template)
                            : parse_chat_template_name(chat_template).value_or(ChatTemplate::Llama2);
      ChatMessage message{"user", text};
      text = render_chat(t, std::span(&message, 1));
    }
    std::vector<int> ids = tok->encode(text, !no_bos && tok->vocab().add_bos, !no_special);
    if (pieces) {
      for (int id : ids) fmt::print("{}\t{:?}\n", id, tok->token_to_piece(id, true));
    } else {
      std::string line;
      for (int id : ids) line += (line.empty() ? "" : " ") + std::to_string(id);
      fmt::print("{}\n", line);
    }
    return 0;
  });
}
