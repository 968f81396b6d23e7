// generator.cpp - the prefill-then-decode loop shared by kdsl-run and the tests
#include "models/engine/generator.h"

#include <fmt/format.h>

#include <bit>
#include <chrono>
#include <cstdint>
#include <limits>

#include <kdsl/error.h>
#include <kdsl/kernel.h>

#include "models/tokenizer/stream_decoder.h"

namespace kdsl::models {
namespace {
double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}
// A NaN or an infinity in the logits means the weights or hyper-parameters are broken (or a
// kernel is): sampling from them would print one fixed token forever and exit 0. The scan tests
// the exponent bits rather than std::isfinite, which -ffinite-math-only may fold to true, and
// costs a few microseconds against a forward pass of milliseconds.
// `step`: the decode step (1 for the first token fed back), 0 for the prompt's prefill.
void check_finite_logits(std::span<const float> logits, size_t step) {
  uint32_t all_ones = 0;
  for (float v : logits) all_ones |= uint32_t((std::bit_cast<uint32_t>(v) & 0x7f800000u) == 0x7f800000u);
  if (!all_ones) return;
  size_t at = 0;
  while ((std::bit_cast<uint32_t>(logits[at]) & 0x7f800000u) != 0x7f800000u) ++at;
  throw Error(fmt::format("the model's logits are not finite ({} at token id {}) {}: "
                          "its weights or hyper-parameters hold NaN or infinite values",
                          logits[at] != logits[at] ? "NaN" : "infinity", at,
                          step == 0 ? std::string("after the prompt") : fmt::format("at decode step {}", step)));
}

bool ends_with_any(const std::string &text, const std::vector<std::string> &suffixes) {
  for (const std::string &s : suffixes)
    if (!s.empty() && text.size() >= s.size() && text.compare(text.size() - s.size(), s.size(), s) == 0) return true;
  return false;
}

}  // namespace

void check_prompt_fits(const Engine &engine, const std::vector<int> &prompt_ids) {
  if (prompt_ids.empty()) throw Error("the prompt encodes to no tokens (give a prompt, or use a model whose tokenizer adds BOS)");
  if (int(prompt_ids.size()) >= engine.context())
    throw Error(fmt::format("the prompt is {} tokens but the context holds {}: shorten it or raise --ctx", prompt_ids.size(), engine.context()));
}

GenerationResult generate(Engine &engine, const Tokenizer &tokenizer, Sampler &sampler, const std::vector<int> &prompt_ids,
                          const GenerateOptions &options, const std::function<void(std::string_view)> &on_text) {
  const int max_tokens = options.max_tokens < 0 ? std::numeric_limits<int>::max() : options.max_tokens;
  GenerationResult r;
  r.prompt_ids = prompt_ids;
  check_prompt_fits(engine, prompt_ids);
  for (int id : prompt_ids) sampler.accept(id);

  double compile_ms = cache_stats().compile_ms;
  auto start = std::chrono::steady_clock::now();
  std::span<const float> logits = engine.forward(prompt_ids, 0);
  r.prompt_ms = ms_since(start);
  check_finite_logits(logits, 0);
  r.prompt_compile_ms = cache_stats().compile_ms - compile_ms;
  compile_ms = cache_stats().compile_ms;

  // Generated text continues the prompt's: it starts the text only after an empty prompt (BOS).
  StreamDecoder stream(tokenizer, tokenizer.decode(prompt_ids).empty());
  int pos = int(prompt_ids.size());
  start = std::chrono::steady_clock::now();
  r.stop_reason = "length";
  for (int i = 0; i < max_tokens; ++i) {
    int next = sampler.sample(logits);
    sampler.accept(next);
    if (!options.ignore_eos && (tokenizer.is_end_of_generation(next) || next == tokenizer.bos_id())) {
      r.stop_reason = "eos";
      break;
    }
    r.generated_ids.push_back(next);
    std::string piece = stream.push(next);
    r.text += piece;
    if (on_text && !piece.empty()) on_text(piece);
    if (ends_with_any(r.text, options.stop_strings)) {
      r.stop_reason = "stop";
      break;
    }
    if (i + 1 == max_tokens) break;
    if (pos >= engine.context()) {
      r.stop_reason = "context";
      break;
    }
    int token[1] = {next};
    logits = engine.forward(token, pos++);
    check_finite_logits(logits, r.generated_ids.size());
  }
  std::string rest = stream.flush();
  r.text += rest;
  if (on_text && !rest.empty()) on_text(rest);
  r.generation_ms = ms_since(start);
  r.generation_compile_ms = cache_stats().compile_ms - compile_ms;
  return r;
}

}  // namespace kdsl::models
