// model_tokenizer.cpp - choosing a model's tokenizer
#include "models/engine/model_tokenizer.h"

#include <fmt/format.h>
#include <kdsl/error.h>

namespace kdsl::models {

std::unique_ptr<Tokenizer> open_model_tokenizer(const ModelWeights &model, const std::string &model_path, const std::string &tokenizer_bin) {
  if (!tokenizer_bin.empty()) return load_tokenizer_bin(tokenizer_bin, int(model.hparams.n_vocab));
  if (model.gguf) return load_tokenizer(*model.gguf);  // parsed once, with the weights
  throw Error(fmt::format("{} is a llama2.c checkpoint, which holds no tokenizer: pass its tokenizer.bin with -z", model_path));
}

}  // namespace kdsl::models
