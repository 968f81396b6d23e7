// kdsl_synth.cpp - kdsl-synth: writes a GGUF llama / qwen2 / qwen3 model of any shape with deterministic random weights
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <kdsl/error.h>

#include <chrono>
#include <filesystem>
#include <stdexcept>

#include "models/gguf/gguf_file.h"
#include "models/synth/synth_model.h"
#include "models/tokenizer/chat_template.h"
#include "src/tools/tool_main.h"

using namespace kdsl::models;

namespace {

GgmlType type_option(const std::string &option, const std::string &name) {
  if (auto t = parse_ggml_type(name)) return *t;
  throw kdsl::Error(fmt::format("{} '{}' is not a tensor type (expected one of {})", option, name,
                                kdsl::formats::weight_type_names([](const kdsl::formats::WeightTypeInfo &t) { return t.readable; })));
}

// A Jinja snippet carrying the markers detect_chat_template looks for.
std::string template_source(ChatTemplate t) {
  switch (t) {
    case ChatTemplate::ChatML:
      return "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
             "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
    case ChatTemplate::Llama3:
      return "{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + "
             "message['content'] | trim + '<|eot_id|>' }}{% endfor %}";
    case ChatTemplate::Llama2:
      return "{% if messages[0]['role'] == 'system' %}{{ '<<SYS>>\\n' + messages[0]['content'] + '\\n<</SYS>>\\n\\n' }}"
             "{% endif %}{{ '[INST] ' + message['content'] + ' [/INST]' }}";
    case ChatTemplate::Mistral:
      return "{{ bos_token }}{% for message in messages %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% endfor %}";
  }
  return "";
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kdsl-synth: writes a synthetic GGUF model (deterministic random weights, synthetic tokenizer)"};
  std::string out, preset = "tiny", arch = "llama", weight_type = "f32", embedding_type, tokenizer = "default", chat;
  SynthConfig c;
  int64_t dim = 0, layers = 0, heads = 0, kv_heads = 0, ff = 0, vocab = 0, head_dim = 0, context = 0;
  app.add_option("-o,--output", out, "the GGUF file to write")->required();
  app.add_option("--preset", preset, "starting point: tiny, 110m, qwen3-tiny")->capture_default_str();
  app.add_option("--arch", arch, "llama, qwen2 or qwen3");
  app.add_option("--dim", dim, "embedding length");
  app.add_option("--layers", layers, "block count");
  app.add_option("--heads", heads, "attention heads");
  app.add_option("--kv-heads", kv_heads, "key/value heads");
  app.add_option("--ff", ff, "feed-forward length");
  app.add_option("--vocab", vocab, "vocabulary size");
  app.add_option("--head-dim", head_dim, "head size (default dim / heads)");
  app.add_option("--context", context, "context length");
  app.add_option("--type", weight_type, "attention / feed-forward tensor type")->capture_default_str();
  app.add_option("--embedding-type", embedding_type, "token_embd / output tensor type (default: --type)");
  app.add_flag("--tied", c.tied_embeddings, "no output.weight: the classifier reuses token_embd");
  app.add_option("--tokenizer", tokenizer, "spm, bpe or default (llama: spm, qwen: bpe)")->capture_default_str();
  app.add_option("--chat-template", chat, "store a chat template: llama2, llama3, chatml, mistral");
  app.add_option("--seed", c.seed, "weight seed")->capture_default_str();
  if (int status = kdsl::tools::parse_command_line(app, "kdsl-synth", argc, argv); status >= 0) return status;

  return kdsl::tools::run_tool("kdsl-synth", out, [&] {
    uint64_t seed = c.seed;
    bool tied = c.tied_embeddings;
    bool arch_given = app.count("--arch") > 0;
    c = synth_preset(preset);
    c.seed = seed;
    c.tied_embeddings = c.tied_embeddings || tied;
    ModelHParams &h = c.hparams;
    if (arch_given) {
      auto a = parse_arch(arch);
      if (!a) throw kdsl::Error(fmt::format("--arch '{}' is not supported (expected llama, qwen2 or qwen3)", arch));
      h.arch = *a;
    }
    for (auto [value, field] : {std::pair{dim, &h.n_embd}, {layers, &h.n_layer}, {heads, &h.n_head},
                                {kv_heads, &h.n_head_kv}, {ff, &h.n_ff}, {vocab, &h.n_vocab},
                                {head_dim, &h.head_dim}, {context, &h.context_length}})
      if (value != 0) *field = value;
    if (heads != 0 && kv_heads == 0) h.n_head_kv = heads;
    if (dim != 0 || heads != 0) h.head_dim = head_dim;  // recomputed from the new dim / heads unless given
    c.weight_type = type_option("--type", weight_type);
    c.embedding_type = type_option("--embedding-type", embedding_type.empty() ? weight_type : embedding_type);
    if (tokenizer == "spm") c.tokenizer = SynthTokenizer::SentencePiece;
    else if (tokenizer == "bpe") c.tokenizer = SynthTokenizer::ByteLevelBpe;
    else if (tokenizer != "default") throw kdsl::Error(fmt::format("--tokenizer '{}': expected spm, bpe or default", tokenizer));
    if (!chat.empty()) {
      auto t = parse_chat_template_name(chat);
      if (!t) throw kdsl::Error(fmt::format("--chat-template '{}': expected llama2, llama3, chatml or mistral", chat));
      c.chat_template = template_source(*t);
    }
    auto start = std::chrono::steady_clock::now();
    write_synthetic_model(c, out);
    // What kdsl-synth writes, kdsl-run loads: a model its loader refuses is a bug here, and is
    // not left behind.
    try {
      load_hparams(GgufFile(out));
    } catch (const kdsl::Error &e) {
      std::filesystem::remove(out);
      throw std::logic_error(fmt::format("the model written would be refused by kdsl-run: {}", e.what()));
    }
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    fmt::print("kdsl-synth: wrote {} ({} {} layers, dim {}, {} heads / {} kv, ff {}, vocab {}, {}; {:.1f} MiB in {:.1f} s)\n",
               out, arch_name(h.arch), h.n_layer, h.n_embd, h.n_head, h.n_head_kv, h.n_ff, h.n_vocab,
               ggml_type_traits(c.weight_type).ggml_name, double(std::filesystem::file_size(out)) / (1 << 20), seconds);
    return 0;
  });
}
