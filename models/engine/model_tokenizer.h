// model_tokenizer.h - the tokenizer that goes with a loaded model: its GGUF vocabulary, or a llama2.c tokenizer.bin
#pragma once
#include <memory>
#include <string>

#include "models/engine/model_weights.h"
#include "models/tokenizer/tokenizer.h"

namespace kdsl::models {

// `tokenizer_bin` (a llama2.c tokenizer.bin, sized to the model) when given; else the GGUF's
// own vocabulary, from the parse the weights were loaded from. A llama2.c checkpoint holds no
// tokenizer: without `tokenizer_bin` that is an error naming `model_path` and the -z flag.
std::unique_ptr<Tokenizer> open_model_tokenizer(const ModelWeights &model, const std::string &model_path, const std::string &tokenizer_bin);

}  // namespace kdsl::models
