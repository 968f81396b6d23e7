// stream_chat_test.cpp - streaming decode that never splits a character, and the four chat templates
#include <doctest/doctest.h>

#include <kdsl/error.h>

#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_writer.h"
#include "models/synth/synth_model.h"
#include "models/tokenizer/chat_template.h"
#include "models/tokenizer/stream_decoder.h"
#include "models/tokenizer/tokenizer.h"
#include "shared_models.h"

using namespace kdsl::models;

TEST_CASE("stream: a character split over byte tokens prints once it is complete") {
  auto path = kdsl::test::shared_model("llama2-tokenizer.bin");
  if (!path) return;
  auto tok = load_tokenizer_bin(*path);
  std::vector<int> smile = {1, 29871, 3 + 0xF0, 3 + 0x9F, 3 + 0x99, 3 + 0x82};  // <s> ▁ then 🙂 as four bytes
  StreamDecoder d(*tok);
  CHECK(d.push(smile[0]).empty());
  CHECK(d.push(smile[1]).empty());  // the dummy-prefix space at the start is dropped
  CHECK(d.push(smile[2]).empty());
  CHECK(d.push(smile[3]).empty());
  CHECK(d.push(smile[4]).empty());
  CHECK(d.push(smile[5]) == "🙂");
  CHECK(d.flush().empty());

  for (std::string text : {"naïve café — 東京 🙂 ok", "I believe the meaning of life is", "ü🙂ü"}) {
    std::vector<int> ids = tok->encode(text, true);
    StreamDecoder s(*tok);
    std::string streamed;
    for (int id : ids) {
      std::string part = s.push(id);
      // every piece printed is whole UTF-8: no lead byte without its continuation bytes
      if (!part.empty()) CHECK((uint8_t(part.back()) < 0x80 || (uint8_t(part.back()) & 0xC0) == 0x80));
      streamed += part;
    }
    CHECK(streamed + s.flush() == text);
    CHECK(streamed == tok->decode(ids));
  }

  StreamDecoder cut(*tok);
  CHECK(cut.push(3 + 0xE6).empty());  // the first byte of 東 and then the end of generation
  CHECK(cut.flush() == "\xE6");
}

TEST_CASE("chat: templates render the documented formats") {
  std::vector<ChatMessage> chat = {{"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello!"}, {"user", "Bye"}};
  CHECK(render_chat(ChatTemplate::ChatML, chat) ==
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
        "<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
  CHECK(render_chat(ChatTemplate::Llama3, chat) ==
        "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi"
        "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHello!<|eot_id|><|start_header_id|>user"
        "<|end_header_id|>\n\nBye<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n");
  CHECK(render_chat(ChatTemplate::Llama2, chat) ==
        "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] Bye [/INST]");
  CHECK(render_chat(ChatTemplate::Mistral, chat) == "[INST] Be brief.\n\nHi [/INST]Hello!</s>[INST] Bye [/INST]");
  CHECK(render_chat(ChatTemplate::ChatML, std::vector<ChatMessage>{{"user", "x"}}, false) == "<|im_start|>user\nx<|im_end|>\n");
  CHECK_THROWS_WITH_AS(render_chat(ChatTemplate::ChatML, std::vector<ChatMessage>{{"tool", "x"}}),
                       "chat message role 'tool' is not one of system, user, assistant", kdsl::Error);
}

TEST_CASE("chat: the template is recognised from tokenizer.chat_template, or named by --chat-template") {
  CHECK(detect_chat_template("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n'}}") ==
        ChatTemplate::ChatML);
  CHECK(detect_chat_template("{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}") ==
        ChatTemplate::Llama3);
  CHECK(detect_chat_template("{{ '[INST] ' + content + ' [/INST]' }}{% if system %}<<SYS>>{% endif %}") ==
        ChatTemplate::Llama2);
  CHECK(detect_chat_template("{{ bos_token }}{{ '[INST] ' + message['content'] + ' [/INST]' }}") == ChatTemplate::Mistral);
  CHECK_FALSE(detect_chat_template("{{ '<start_of_turn>' + role }}"));

  auto gguf_with = [](const std::string &tmpl) {
    GgufWriter w;
    if (!tmpl.empty()) w.set("tokenizer.chat_template", tmpl);
    return GgufFile::from_bytes(w.to_bytes(), "chat.gguf");
  };
  CHECK(select_chat_template(gguf_with("<|im_start|>")) == ChatTemplate::ChatML);
  CHECK(select_chat_template(gguf_with("<|im_start|>"), "llama3") == ChatTemplate::Llama3);
  CHECK_THROWS_WITH_AS(select_chat_template(gguf_with("{{ '<start_of_turn>' + role }}")),
                       "chat.gguf: tokenizer.chat_template is not a template kdsl recognises (it begins \"{{ "
                       "'<start_of_turn>' + role }}\"); pass --chat-template with one of llama2, llama3, chatml, mistral",
                       kdsl::Error);
  CHECK_THROWS_WITH_AS(select_chat_template(gguf_with("")), doctest::Contains("has no tokenizer.chat_template; pass --chat-template"),
                       kdsl::Error);
  CHECK_THROWS_WITH_AS(select_chat_template(gguf_with(""), "vicuna"),
                       "--chat-template 'vicuna' is not a known template: pass --chat-template with one of llama2, "
                       "llama3, chatml, mistral",
                       kdsl::Error);
}

TEST_CASE("chat: a rendered ChatML prompt tokenizes with its special tokens whole") {
  GgufWriter w;
  add_synthetic_model(w, synth_preset("qwen3-tiny"));
  GgufFile f = GgufFile::from_bytes(w.to_bytes(), "q.gguf");
  auto tok = load_tokenizer(f);
  std::vector<ChatMessage> chat = {{"user", "hi"}};
  std::vector<int> ids = tok->encode(render_chat(ChatTemplate::ChatML, chat), tok->vocab().add_bos);
  int im_start = tok->find_piece("<|im_start|>"), im_end = tok->find_piece("<|im_end|>");
  CHECK(std::count(ids.begin(), ids.end(), im_start) == 2);
  CHECK(std::count(ids.begin(), ids.end(), im_end) == 1);
  CHECK(tok->is_end_of_generation(im_end));
  CHECK(ids.front() == im_start);  // qwen adds no BOS
}
