// generator.h - prompt in, tokens out: prefill, sampling, streaming text, and the timings of each phase
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "models/engine/engine.h"
#include "models/sampler/sampler.h"
#include "models/spec/draft_length.h"
#include "models/spec/drafter.h"
#include "models/tokenizer/tokenizer.h"

namespace kdsl::models {

struct GenerationResult {
  std::vector<int> prompt_ids;
  std::vector<int> generated_ids;
  std::string text;          // the generated text (not the prompt)
  double prompt_ms = 0;      // prefill of the whole prompt
  double generation_ms = 0;  // every decode step after it
  // Of which spent on first use, in wall time: compiling kernels met for the first time and
  // timing tuned points' candidates (kdsl::first_use_ms; zero once the cache is warm).
  double prompt_compile_ms = 0, generation_compile_ms = 0;
  std::string stop_reason;   // "length", "eos", "context", "stop" (a stop string)
  // Speculative decoding (zero without a drafter): drafted tokens the target checked, those it
  // kept, the checks (passes with at least one draft), and accepted_histogram[j] the checks
  // that kept j drafts; the steps that asked the drafter and got nothing back (no n-gram match,
  // a draft model below --draft-p-min), and those that did not ask (speculation off where it
  // would not pay, DraftLength).
  int64_t spec_drafted = 0, spec_accepted = 0, spec_checks = 0, spec_empty = 0, spec_plain = 0;
  std::vector<int64_t> spec_accepted_histogram;
};

struct GenerateOptions {
  int max_tokens = 128;                   // < 0: until end of text or a full context
  bool ignore_eos = false;                // go on past end-of-generation tokens (llama.cpp's --ignore-eos)
  std::vector<std::string> stop_strings;  // stop once the generated text ends with one (--reverse-prompt)
  // Speculative decoding when set: the drafter proposes tokens, the target checks them in one
  // pass (its engine's max_logit_rows must be at least spec.draft_max + 1), and the rejection
  // rule keeps the output exactly what plain decoding samples (token for token when greedy).
  Drafter *drafter = nullptr;
  SpecOptions spec;
};

// Throws kdsl::Error unless `prompt_ids` is non-empty and leaves room in the context for at
// least one generated token (the message says to shorten the prompt or raise --ctx).
void check_prompt_fits(const Engine &engine, const std::vector<int> &prompt_ids);

// Feeds the prompt in one batched prefill, then samples and feeds one token at a time (or,
// with a drafter, checks drafted tokens and keeps the accepted ones) until
// `max_tokens` are generated, the model emits an end-of-generation token (or BOS, which ends
// a llama2.c story), or the context is full. `on_text` receives text as soon as it forms
// whole UTF-8 characters.
GenerationResult generate(Engine &engine, const Tokenizer &tokenizer, Sampler &sampler, const std::vector<int> &prompt_ids,
                          const GenerateOptions &options, const std::function<void(std::string_view)> &on_text = {});
inline GenerationResult generate(Engine &engine, const Tokenizer &tokenizer, Sampler &sampler, const std::vector<int> &prompt_ids, int max_tokens,
                                 const std::function<void(std::string_view)> &on_text = {}) {
  GenerateOptions options;
  options.max_tokens = max_tokens;
  return generate(engine, tokenizer, sampler, prompt_ids, options, on_text);
}

}  // namespace kdsl::models
