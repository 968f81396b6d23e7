// perplexity.cpp - chunked scoring of a text: negative log-likelihoods, and divergence from saved base log-probabilities
#include "models/eval/perplexity.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include <algorithm>
#include <cmath>

#include "models/eval/logprob_file.h"

namespace kdsl::models {
namespace {

// log softmax of one row, in double (a 32000-way sum of exponentials in float loses digits a
// KLD of 1e-4 needs).
void log_softmax(std::span<const float> logits, std::vector<double> &out) {
  double max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float l : logits) sum += std::exp(double(l) - max);
  double log_sum = std::log(sum) + max;
  out.resize(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) out[i] = double(logits[i]) - log_sum;
}

size_t argmax(auto values) { return size_t(std::max_element(values.begin(), values.end()) - values.begin()); }

// Mean and its standard error.
std::pair<double, double> mean_stderr(const std::vector<double> &v) {
  if (v.empty()) return {0, 0};
  double mean = 0;
  for (double x : v) mean += x;
  mean /= double(v.size());
  if (v.size() < 2) return {mean, 0};
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  var /= double(v.size() - 1);
  return {mean, std::sqrt(var / double(v.size()))};
}

void check_base(const LogProbFile &base, std::span<const int> tokens, const PerplexityOptions &o, int chunks, int rows, int vocab) {
  const LogProbHeader &h = base.header();
  if (int(h.vocab) != vocab || int(h.context) != o.context || int(h.rows) != rows)
    throw Error(fmt::format("{}: saved for vocab {}, context {}; this run has vocab {}, context {}: use the same -c and a model of the same vocabulary",
                            base.path(), h.vocab, h.context, vocab, o.context));
  if (int(h.chunks) < chunks)
    throw Error(fmt::format("{}: holds {} chunks, this run scores {}: give --chunks {} or the text the base was scored on", base.path(),
                            h.chunks, chunks, h.chunks));
  std::span<const int32_t> saved = base.tokens();
  for (size_t i = 0; i < size_t(chunks) * size_t(o.context); ++i)
    if (saved[i] != tokens[i])
      throw Error(fmt::format("{}: token {} of the text is {} here but {} in the saved run: score the same text with the same tokenizer",
                              base.path(), i, tokens[i], saved[i]));
}

}  // namespace

double PerplexityResult::perplexity() const { return std::exp(nll); }
double PerplexityResult::perplexity_stderr() const { return std::exp(nll) * nll_stderr; }

DivergenceSummary summarize(std::span<const TokenDivergence> d) {
  DivergenceSummary s;
  if (d.empty()) return s;
  std::vector<double> kld;
  size_t same = 0;
  for (const TokenDivergence &t : d) kld.push_back(t.kld), same += t.same_top1;
  std::tie(s.mean, s.mean_stderr) = mean_stderr(kld);
  std::sort(kld.begin(), kld.end());
  // Nearest rank: the smallest value with at least a fraction p of the values at or below it.
  auto percentile = [&](double p) {
    size_t rank = size_t(std::ceil(p * double(kld.size())));
    return kld[std::clamp<size_t>(rank, 1, kld.size()) - 1];
  };
  s.median = kld.size() % 2 ? kld[kld.size() / 2] : (kld[kld.size() / 2 - 1] + kld[kld.size() / 2]) / 2;
  s.p99 = percentile(0.99);
  s.max = kld.back();
  s.top1_agreement = double(same) / double(d.size());
  return s;
}

PerplexityResult perplexity(Engine &engine, std::span<const int> tokens, const PerplexityOptions &o, LogProbWriter *save,
                            const LogProbFile *base, const std::function<void(int, int)> &progress) {
  if (o.context < 4) throw Error(fmt::format("perplexity: context {} is too small (at least 4)", o.context));
  const int first = o.context / 2, rows = o.context - 1 - first, vocab = engine.vocab();
  if (o.context > engine.context() || rows > engine.max_logit_rows())
    throw Error(fmt::format("perplexity: context {} needs an engine with that context and {} logit rows (it has {} and {})", o.context, rows,
                            engine.context(), engine.max_logit_rows()));
  int available = int(tokens.size() / size_t(o.context));
  if (available == 0)
    throw Error(fmt::format("perplexity: the text has {} tokens, fewer than one chunk of {} (lower -c or give more text)", tokens.size(), o.context));
  int chunks = o.max_chunks > 0 ? std::min(o.max_chunks, available) : available;
  if (base) check_base(*base, tokens, o, chunks, rows, vocab);

  PerplexityResult result;
  result.chunks = chunks;
  std::vector<double> nll, base_nll, log_p;
  std::vector<float> chunk_log_probs(save ? size_t(rows) * size_t(vocab) : 0);
  std::vector<int> input(size_t(o.context));
  for (int c = 0; c < chunks; ++c) {
    std::span<const int> text = tokens.subspan(size_t(c) * size_t(o.context), size_t(o.context));
    std::copy(text.begin(), text.end(), input.begin());
    if (o.bos >= 0) input[0] = o.bos;
    // The unscored first half, then the rows whose logits are wanted (the last token's
    // prediction has nothing to score and is not run).
    engine.forward(std::span<const int>(input).first(size_t(first)), 0);
    std::span<const float> logits = engine.forward_rows(std::span<const int>(input).subspan(size_t(first), size_t(rows)), first);
    for (int row = 0; row < rows; ++row) {
      log_softmax(logits.subspan(size_t(row) * size_t(vocab), size_t(vocab)), log_p);
      int next = text[size_t(first + row + 1)];
      nll.push_back(-log_p[size_t(next)]);
      if (save)
        std::transform(log_p.begin(), log_p.end(), chunk_log_probs.begin() + ptrdiff_t(row) * vocab, [](double v) { return float(v); });
      if (base) {
        std::span<const float> q = base->row(uint32_t(c), uint32_t(row));
        TokenDivergence t;
        for (size_t i = 0; i < size_t(vocab); ++i) t.kld += std::exp(double(q[i])) * (double(q[i]) - log_p[i]);
        t.kld = std::max(t.kld, 0.0);  // rounding can take an identical pair a hair below 0
        t.same_top1 = argmax(q) == argmax(log_p);
        result.divergence.push_back(t);
        base_nll.push_back(-double(q[size_t(next)]));
      }
    }
    if (save) save->add_chunk(chunk_log_probs);
    if (progress) progress(c + 1, chunks);
  }
  result.scored = int64_t(nll.size());
  std::tie(result.nll, result.nll_stderr) = mean_stderr(nll);
  if (base) result.base_nll = mean_stderr(base_nll).first;
  return result;
}

}  // namespace kdsl::models
