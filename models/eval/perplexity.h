// perplexity.h - a model's perplexity over a text by llama.cpp's method, and the KL divergence of its next-token distributions from a base model's
#pragma once
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "models/engine/engine.h"

namespace kdsl::models {

class LogProbWriter;
class LogProbFile;

// llama.cpp's llama-perplexity method, so the figures compare: the tokens of the text are cut
// into chunks of `context` tokens (what does not fill a chunk is dropped); each chunk runs from
// an empty cache with its first token replaced by BOS (when the model adds one), and only
// the second half is scored, each token given at least context / 2 tokens before it: rows
// first .. context - 2 (first = context / 2) predict tokens first + 1 .. context - 1.
struct PerplexityOptions {
  int context = 512;
  int scored_rows() const { return context - 1 - context / 2; }
  int max_chunks = 0;  // 0: every whole chunk of the text
  int bos = -1;        // BOS id put at the start of each chunk; -1: none (qwen)
};

// One scored token's figures against a base model's distribution.
struct TokenDivergence {
  double kld = 0;         // KL(base || model), nats
  bool same_top1 = true;  // both put the most probability on the same token
};

struct PerplexityResult {
  int chunks = 0;
  int64_t scored = 0;       // tokens scored
  double nll = 0;           // mean negative log-likelihood, nats
  double nll_stderr = 0;    // its standard error
  double perplexity() const;  // exp(nll)
  double perplexity_stderr() const;
  // Set when a base model's log-probabilities were given:
  std::optional<double> base_nll;
  std::vector<TokenDivergence> divergence;  // one per scored token, in text order
};

// The summary statistics llama.cpp's --kl-divergence prints.
struct DivergenceSummary {
  double mean = 0, mean_stderr = 0, median = 0, p99 = 0, max = 0;
  double top1_agreement = 0;  // fraction of tokens
};
DivergenceSummary summarize(std::span<const TokenDivergence> d);

// Scores `tokens` on `engine` (whose context must hold options.context tokens and whose
// max_logit_rows must be at least the scored rows, context - 1 - context / 2). With `save`, the scored rows' log-probabilities are
// written for a later comparison; with `base`, each scored row is compared with the base's
// (the same tokens and context, checked). `progress(chunk, chunks)` after each chunk.
PerplexityResult perplexity(Engine &engine, std::span<const int> tokens, const PerplexityOptions &options, LogProbWriter *save = nullptr,
                            const LogProbFile *base = nullptr, const std::function<void(int, int)> &progress = {});

}  // namespace kdsl::models
