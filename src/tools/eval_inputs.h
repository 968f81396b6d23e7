// eval_inputs.h - what the evaluation tools (kdsl-perplexity, kdsl-imatrix) start from: the --device they name and a text file tokenized whole
#pragma once
#include <fmt/format.h>
#include <kdsl/device.h>
#include <kdsl/error.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "models/tokenizer/tokenizer.h"

namespace kdsl::tools {

inline std::string read_text_file(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(fmt::format("{}: cannot open the text file", path));
  std::stringstream s;
  s << f.rdbuf();
  if (f.bad()) throw Error(fmt::format("{}: read error", path));
  return s.str();
}

// --device cpu (with `threads`, 0: all cores) or cuda (GPU 0).
inline Device eval_device(const std::string &name, int threads) {
  if (name == "cuda") return Device::cuda(0);
  if (name == "cpu") return Device::cpu(threads);
  throw Error(fmt::format("--device {}: expected cpu or cuda", name));
}

// A text's tokens, the whole file at once, BOS first as the model's tokenizer says; `bos` is
// what llama.cpp's chunked tools put in place of each chunk's first token (-1: none).
struct ChunkedText {
  std::vector<int> tokens;
  int bos = -1;
};
inline ChunkedText tokenize_text_file(const models::Tokenizer &tok, const std::string &path) {
  const bool bos = tok.vocab().add_bos && tok.bos_id() >= 0;
  return {tok.encode(read_text_file(path), bos), bos ? tok.bos_id() : -1};
}

}  // namespace kdsl::tools
