// model_weights_gguf_test.cpp - a loaded GGUF model hands out its one parse for the tokenizer and chat template
#include <doctest/doctest.h>

#include "models/engine/model_weights.h"
#include "models/gguf/gguf_file.h"
#include "models/synth/synth_model.h"
#include "models/tokenizer/tokenizer.h"
#include "shared_models.h"

using namespace kdsl::models;

TEST_CASE("model weights: a GGUF's parse is kept for the tokenizer; a llama2.c checkpoint has none") {
  std::string path = kdsl::test::scratch_path("weights_parse_once.gguf");
  write_synthetic_model(synth_preset("tiny"), path);
  ModelWeights m = load_model_weights(path);
  REQUIRE(m.gguf != nullptr);
  CHECK(m.gguf->path() == path);
  CHECK(load_tokenizer(*m.gguf)->vocab_size() == m.hparams.n_vocab);
  if (auto llama2c = kdsl::test::shared_model("stories260K.bin")) CHECK(load_model_weights(*llama2c).gguf == nullptr);
}
