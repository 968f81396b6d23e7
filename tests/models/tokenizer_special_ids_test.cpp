// tokenizer_special_ids_test.cpp - special-token ids in GGUF metadata: llama.cpp's "none" sentinel loads with a warning, others are checked
#include <doctest/doctest.h>

#include <kdsl/error.h>

#include "models/common/warning.h"
#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_writer.h"
#include "models/synth/synth_model.h"
#include "models/tokenizer/tokenizer.h"

using namespace kdsl::models;

namespace {

GgufFile tiny_with(const std::string &key, GgufValue value) {
  GgufWriter w;
  add_synthetic_model(w, synth_preset("tiny"));
  w.set(key, std::move(value));
  return GgufFile::from_bytes(w.to_bytes(), "special_ids.gguf");
}

}  // namespace

TEST_CASE("tokenizer: a special-token id of 0xFFFFFFFF or -1 means none, with one warning (llama.cpp's converters write it)") {
  std::vector<std::string> warnings;
  WarningSink previous = set_warning_sink([&](const std::string &m) { warnings.push_back(m); });
  auto pad = load_tokenizer(tiny_with("tokenizer.ggml.padding_token_id", uint32_t(0xFFFFFFFF)));
  CHECK(pad->vocab().pad == -1);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == "special_ids.gguf: metadata 'tokenizer.ggml.padding_token_id' = 4294967295 means no such token; it is treated as absent");
  warnings.clear();
  auto bos = load_tokenizer(tiny_with("tokenizer.ggml.bos_token_id", int32_t(-1)));
  CHECK(bos->vocab().bos == -1);
  CHECK(warnings.size() == 1);
  CHECK(bos->encode("hello", true).front() != -1);  // no BOS to add, and nothing invalid added
  set_warning_sink(previous);
  // Any other id outside the vocabulary is still refused, naming the key.
  CHECK_THROWS_WITH_AS(load_tokenizer(tiny_with("tokenizer.ggml.padding_token_id", uint32_t(600))),
                       doctest::Contains("'tokenizer.ggml.padding_token_id': token id 600 is outside the vocabulary of 512 tokens"),
                       kdsl::Error);
}
