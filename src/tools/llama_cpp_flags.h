// llama_cpp_flags.h - llama.cpp's spellings on kdsl-run's command line: single-dash long names rewritten, unsupported flags refused by name
#pragma once
#include <fmt/format.h>
#include <kdsl/error.h>

#include <string>
#include <string_view>
#include <vector>

namespace kdsl::tools {

// llama.cpp spells some long options with one dash (`-ngl 99`, `-fa on`), which a getopt-style
// parser reads as clusters of short ones (`-f a`: a prompt file named "a"). They are rewritten
// to their double-dash names before parsing (`-i` too, so that it is refused by its long name).
struct SingleDashSpelling {
  std::string_view single_dash, double_dash;
};
inline constexpr SingleDashSpelling kSingleDashSpellings[] = {
    {"-fa", "--flash-attn"},     {"-ngl", "--n-gpu-layers"}, {"-cnv", "--conversation"}, {"-sys", "--system-prompt"},
    {"-ctk", "--cache-type-k"},  {"-ctv", "--cache-type-v"}, {"-ts", "--tensor-split"},  {"-sm", "--split-mode"},
    {"-mg", "--main-gpu"},       {"-md", "--model-draft"},   {"-hf", "--hf-repo"},       {"-ub", "--ubatch-size"},
    {"-dev", "--device"},        {"-lv", "--verbosity"},     {"-no-cnv", "--no-conversation"},
    {"-i", "--interactive"},     {"-nr", "--no-repack"},
};

// llama.cpp options kdsl-run knows and does not do, each with what to use instead. A user who
// types one learns that from one line, rather than "not expected".
struct UnsupportedFlag {
  std::string_view name, why;
};
inline constexpr UnsupportedFlag kUnsupportedFlags[] = {
    {"--n-gpu-layers", "kdsl runs the whole model on one device; --device chooses it (cpu, cuda, auto)"},
    {"--gpu-layers", "kdsl runs the whole model on one device; --device chooses it (cpu, cuda, auto)"},
    {"--tensor-split", "kdsl runs the whole model on one device; --device chooses it"},
    {"--split-mode", "kdsl runs the whole model on one device; --device chooses it"},
    {"--main-gpu", "kdsl uses GPU 0 (--device cuda)"},
    {"--hf-repo", "kdsl-run reads local files only: download the GGUF and pass it with -m"},
    {"--interactive", "raw interactive mode is not implemented: --chat (-cnv) talks to the model with its chat template"},
    {"--mirostat", "mirostat sampling is not implemented: use --temp, --top-k, --top-p, --min-p"},
    {"--grammar", "grammar-constrained sampling is not implemented"},
    {"--grammar-file", "grammar-constrained sampling is not implemented"},
    {"--json-schema", "grammar-constrained sampling is not implemented"},
    {"--lora", "LoRA adapters are not implemented"},
    {"--rope-scaling", "RoPE scaling (linear, YaRN) comes from the model file"},
    {"--rope-freq-base", "the RoPE base comes from the model file"},
    {"--rope-freq-scale", "RoPE scaling (linear, YaRN) comes from the model file"},
    {"--numa", "NUMA placement is not implemented"},
    {"--prompt-cache", "prompt caches are not implemented"},
    {"--mmproj", "multimodal projectors are not implemented"},
};

// argv with llama.cpp's single-dash long names spelled with two dashes; throws kdsl::Error
// for an unsupported llama.cpp flag, naming it and what to do instead.
inline std::vector<std::string> translate_llama_cpp_flags(int argc, char **argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {  // everything after is a value
      for (; i < argc; ++i) args.emplace_back(argv[i]);
      break;
    }
    for (const SingleDashSpelling &s : kSingleDashSpellings)
      if (arg == s.single_dash) arg = s.double_dash;
    std::string name = arg.substr(0, arg.find('='));
    for (const UnsupportedFlag &u : kUnsupportedFlags)
      if (name == u.name) throw Error(fmt::format("{} is a llama.cpp option kdsl-run does not support: {}", argv[i], u.why));
    args.push_back(std::move(arg));
  }
  return args;
}

// llama.cpp's prompt escapes (-e, on by default there): \n \r \t \\ \' \" and \xNN.
inline std::string process_escapes(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\' || i + 1 == text.size()) {
      out += text[i];
      continue;
    }
    char c = text[++i];
    auto hex = [](char h) { return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1; };
    switch (c) {
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'x':
        if (i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
          out += char(hex(text[i + 1]) * 16 + hex(text[i + 2]));
          i += 2;
          break;
        }
        [[fallthrough]];
      default: out += '\\', out += c;
    }
  }
  return out;
}

}  // namespace kdsl::tools
