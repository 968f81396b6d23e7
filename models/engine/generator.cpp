// generator.cpp - the prefill-then-decode loop shared by kdsl-run and the tests
#include "models/engine/generator.h"

#include <fmt/format.h>

#include <bit>
#include <chrono>
#include <cstdint>
#include <limits>

#include <kdsl/error.h>
#include <kdsl/autotune.h>
#include <kdsl/kernel.h>

#include "models/spec/tree_verify.h"
#include "models/spec/verify.h"
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

// The decode loop with a drafter. On entry the last generated token is sampled but not yet
// run. Each step runs it and the k drafted tokens after it in one pass (positions pos ..
// pos + k), checks row i against draft i until one is rejected, and draws the token after the
// last accepted draft from that row (the rejection rule's replacement, or the target's own
// next token when all k are kept): a + 1 tokens per pass for a accepted drafts. The rows past
// the accepted ones stay in the KV cache until the next pass overwrites them. A tree draft
// (several continuations) runs as Engine::forward_tree, is walked by verify_tree, and its kept
// branch is moved into place with Engine::keep_branch.
void speculate(Engine &engine, Sampler &sampler, const std::vector<int> &prompt_ids, const GenerateOptions &options, int max_tokens,
               GenerationResult &r, int pos, const std::function<bool(int)> &emit) {
  const SpecOptions &spec = options.spec;
  DraftLength lengths(spec);
  if (engine.max_logit_rows() < spec.draft_max + 1)
    throw Error(fmt::format("speculative decoding with --draft-max {} checks {} rows per pass, but the engine keeps logits for {} "
                            "(EngineOptions::max_logit_rows)",
                            spec.draft_max, spec.draft_max + 1, engine.max_logit_rows()));
  const size_t vocab = size_t(engine.vocab());
  // The whole text for the drafter, and the pass's tokens: sized once.
  std::vector<int> text = prompt_ids;
  text.reserve(size_t(engine.context()) + size_t(spec.draft_max) + 1);
  text.insert(text.end(), r.generated_ids.begin(), r.generated_ids.end());
  std::vector<int> batch;
  batch.reserve(size_t(spec.draft_max) + 1);
  std::vector<float> scratch(vocab);
  Draft draft;
  std::vector<int> tree_parents;  // a tree draft's parents, counted from the root (node 0)
  TreeVerdict verdict;
  r.spec_accepted_histogram.assign(size_t(spec.draft_max) + 1, 0);
  for (;;) {
    if (pos >= engine.context()) {
      r.stop_reason = "context";
      return;
    }
    // Drafts past the context, or past what is left to generate, would be thrown away.
    int room = std::min<int64_t>({spec.draft_max, engine.context() - pos - 1, int64_t(max_tokens) - int64_t(r.generated_ids.size()) - 1});
    int k = std::min(lengths.next(), room);
    // A step that compiled a kernel (a new row count, say) says nothing of the steady cost.
    const double compile_before = cache_stats().compile_ms;
    auto t = std::chrono::steady_clock::now();
    draft.clear();
    if (k > 0 && k >= spec.draft_min) options.drafter->draft(text, k, draft);
    // A tree's nodes come parents first, so its first k nodes are a tree too; one pass checks
    // at most Engine::kMaxTreeNodes of them and one chunk's rows, the root included.
    if (draft.is_tree()) k = std::min({k, Engine::kMaxTreeNodes - 1, engine.max_batch() - 1});
    if (int(draft.tokens.size()) > k) {
      draft.tokens.resize(size_t(k)), draft.q.resize(draft.q.empty() ? 0 : size_t(k) * vocab);
      if (draft.is_tree()) draft.parents.resize(size_t(k));
    }
    if (int(draft.tokens.size()) < std::max(1, spec.draft_min)) draft.clear();
    const int drafted = int(draft.tokens.size());
    double draft_ms = ms_since(t);
    t = std::chrono::steady_clock::now();
    batch.assign(1, text.back());
    batch.insert(batch.end(), draft.tokens.begin(), draft.tokens.end());
    int accepted = 0;
    bool done = false;
    double check_ms = 0;
    if (draft.is_tree()) {
      // The root is node 0; a drafted node's parent -1 (the text) becomes the root.
      tree_parents.assign(1, -1);
      for (int parent : draft.parents) tree_parents.push_back(parent + 1);
      std::span<const float> rows = engine.forward_tree(batch, tree_parents, pos);
      check_ms = ms_since(t);
      check_finite_logits(rows, r.generated_ids.size());
      verify_tree(sampler, rows, vocab, batch, tree_parents, scratch, verdict);
      engine.keep_branch(verdict.branch, pos);
      accepted = int(verdict.branch.size()) - 1;
      for (size_t i = 0; i < verdict.tokens.size() && !done; ++i) {
        text.push_back(verdict.tokens[i]);
        done = emit(verdict.tokens[i]);
      }
    } else {
      std::span<const float> rows = engine.forward_rows(batch, pos);
      check_ms = ms_since(t);
      check_finite_logits(rows, r.generated_ids.size());
      for (int i = 0; i <= drafted && !done; ++i) {
        std::span<const float> row = rows.subspan(size_t(i) * vocab, vocab);
        int token;
        if (i == drafted) {
          token = sampler.sample(row);
        } else {
          DraftVerdict v = verify_draft(sampler, row, draft.tokens[size_t(i)], draft.q_row(size_t(i), vocab), scratch);
          token = v.token;
          accepted += v.accepted;
          if (!v.accepted) i = drafted;  // the replacement ends this pass
        }
        text.push_back(token);
        done = emit(token);
      }
    }
    pos += accepted + 1;
    if (cache_stats().compile_ms != compile_before) check_ms = draft_ms = -1;
    const int asked = k > 0 && k >= spec.draft_min ? k : 0;
    lengths.record(asked, drafted, accepted, check_ms, draft_ms);
    r.spec_plain += asked == 0, r.spec_empty += asked > 0 && drafted == 0;
    if (drafted > 0) {
      r.spec_drafted += drafted, r.spec_accepted += accepted, ++r.spec_checks;
      ++r.spec_accepted_histogram[size_t(accepted)];
    }
    if (done) return;
  }
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

  CacheStats cache_before = cache_stats();
  TuneStats tune_before = tune_stats();
  auto start = std::chrono::steady_clock::now();
  std::span<const float> logits = engine.forward(prompt_ids, 0);
  if (options.drafter) options.drafter->begin(prompt_ids);  // a draft model's prefill belongs with the target's
  r.prompt_ms = ms_since(start);
  check_finite_logits(logits, 0);
  r.prompt_compile_ms = first_use_ms(cache_before, tune_before);
  cache_before = cache_stats(), tune_before = tune_stats();

  // Generated text continues the prompt's: it starts the text only after an empty prompt (BOS).
  StreamDecoder stream(tokenizer, tokenizer.decode(prompt_ids).empty());
  int pos = int(prompt_ids.size());
  start = std::chrono::steady_clock::now();
  r.stop_reason = "length";
  // Takes one sampled token; true when generation ends with it.
  auto emit = [&](int token) {
    if (!options.ignore_eos && (tokenizer.is_end_of_generation(token) || token == tokenizer.bos_id())) {
      r.stop_reason = "eos";
      return true;
    }
    r.generated_ids.push_back(token);
    std::string piece = stream.push(token);
    r.text += piece;
    if (on_text && !piece.empty()) on_text(piece);
    if (ends_with_any(r.text, options.stop_strings)) {
      r.stop_reason = "stop";
      return true;
    }
    return int64_t(r.generated_ids.size()) >= int64_t(max_tokens);
  };
  if (max_tokens > 0 && !emit(sampler.sample(logits))) {
    if (options.drafter) {
      speculate(engine, sampler, prompt_ids, options, max_tokens, r, pos, emit);
    } else {
      for (;;) {
        if (pos >= engine.context()) {
          r.stop_reason = "context";
          break;
        }
        int token[1] = {r.generated_ids.back()};
        logits = engine.forward(token, pos++);
        check_finite_logits(logits, r.generated_ids.size());
        if (emit(sampler.sample(logits))) break;
      }
    }
  }
  std::string rest = stream.flush();
  r.text += rest;
  if (on_text && !rest.empty()) on_text(rest);
  r.generation_ms = ms_since(start);
  r.generation_compile_ms = first_use_ms(cache_before, tune_before);
  return r;
}

}  // namespace kdsl::models
