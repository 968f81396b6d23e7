// generator.cpp - the prefill-then-decode loop shared by kdsl-run and the tests
#include "models/engine/generator.h"

#include <fmt/format.h>

#include <chrono>

#include <kdsl/error.h>
#include <kdsl/kernel.h>

#include "models/tokenizer/stream_decoder.h"

namespace kdsl::models {
namespace {
double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

void check_prompt_fits(const Engine &engine, const std::vector<int> &prompt_ids) {
  if (prompt_ids.empty()) throw Error("the prompt encodes to no tokens (give a prompt, or use a model whose tokenizer adds BOS)");
  if (int(prompt_ids.size()) >= engine.context())
    throw Error(fmt::format("the prompt is {} tokens but the context holds {}: shorten it or raise --ctx", prompt_ids.size(), engine.context()));
}

GenerationResult generate(Engine &engine, const Tokenizer &tokenizer, Sampler &sampler, const std::vector<int> &prompt_ids, int max_tokens,
                          const std::function<void(std::string_view)> &on_text) {
  GenerationResult r;
  r.prompt_ids = prompt_ids;
  check_prompt_fits(engine, prompt_ids);
  for (int id : prompt_ids) sampler.accept(id);

  double compile_ms = cache_stats().compile_ms;
  auto start = std::chrono::steady_clock::now();
  std::span<const float> logits = engine.forward(prompt_ids, 0);
  r.prompt_ms = ms_since(start);
  r.prompt_compile_ms = cache_stats().compile_ms - compile_ms;
  compile_ms = cache_stats().compile_ms;

  StreamDecoder stream(tokenizer);
  int pos = int(prompt_ids.size());
  start = std::chrono::steady_clock::now();
  r.stop_reason = "length";
  for (int i = 0; i < max_tokens; ++i) {
    int next = sampler.sample(logits);
    sampler.accept(next);
    if (tokenizer.is_end_of_generation(next) || next == tokenizer.bos_id()) {
      r.stop_reason = "eos";
      break;
    }
    r.generated_ids.push_back(next);
    std::string piece = stream.push(next);
    r.text += piece;
    if (on_text && !piece.empty()) on_text(piece);
    if (i + 1 == max_tokens) break;
    if (pos >= engine.context()) {
      r.stop_reason = "context";
      break;
    }
    int token[1] = {next};
    logits = engine.forward(token, pos++);
  }
  std::string rest = stream.flush();
  r.text += rest;
  if (on_text && !rest.empty()) on_text(rest);
  r.generation_ms = ms_since(start);
  r.generation_compile_ms = cache_stats().compile_ms - compile_ms;
  return r;
}

}  // namespace kdsl::models
