// perplexity_test.cpp - perplexity against a float64 scoring of the same chunks, and KL divergence of a quantized copy against saved base log-probabilities
#include <doctest/doctest.h>

#include <kdsl/kdsl.h>

#include <cmath>
#include <fstream>
#include <iterator>

#include "models/eval/logprob_file.h"
#include "models/eval/perplexity.h"
#include "models/synth/synth_model.h"
#include "tests/models/reference_forward.h"
#include "tests/models/shared_models.h"
#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl::models;

namespace {

constexpr int kContext = 16;

std::vector<int> text_tokens(int n, int vocab) {
  std::vector<int> t;
  for (int i = 0; i < n; ++i) t.push_back((i * 131 + 7) % vocab);
  return t;
}

std::string model_file(const std::string &name, GgmlType type) {
  SynthConfig c = synth_preset("tiny");
  c.weight_type = type;
  std::string path = test::scratch_path(name);
  write_synthetic_model(c, path);
  return path;
}

Engine make_engine(const ModelWeights &m) { return Engine(m, Device::cpu(), EngineOptions{.context = kContext, .page_size = 4, .max_batch = 5, .max_logit_rows = kContext}); }

// log p(token) under the float64 reference's logits.
double reference_log_prob(const std::vector<double> &logits, int token) {
  double max = *std::max_element(logits.begin(), logits.end()), sum = 0;
  for (double l : logits) sum += std::exp(l - max);
  return logits[size_t(token)] - max - std::log(sum);
}

}  // namespace

TEST_CASE("perplexity: llama.cpp's chunks and scored half, against a float64 scoring of the same tokens") {
  ModelWeights model = load_model_weights(model_file("ppl_f32.gguf", GgmlType::F32));
  Engine engine = make_engine(model);
  // 3 whole chunks and a ragged tail the method drops.
  std::vector<int> tokens = text_tokens(3 * kContext + 5, int(model.hparams.n_vocab));
  PerplexityOptions o{.context = kContext, .max_chunks = 0, .bos = 1};
  int progress_calls = 0;
  PerplexityResult r = perplexity(engine, tokens, o, nullptr, nullptr, [&](int done, int total) {
    CHECK(total == 3);
    CHECK(done == ++progress_calls);
  });
  CHECK(r.chunks == 3);
  CHECK(r.scored == 3 * (kContext - 1 - kContext / 2));
  std::vector<double> nll;
  for (int c = 0; c < 3; ++c) {
    test::ReferenceForward reference(model);  // an empty cache per chunk
    for (int j = 0; j < kContext - 1; ++j) {
      int token = j == 0 ? o.bos : tokens[size_t(c * kContext + j)];
      std::vector<double> logits = reference.forward(token, j);
      if (j >= kContext / 2) nll.push_back(-reference_log_prob(logits, tokens[size_t(c * kContext + j + 1)]));
    }
  }
  double mean = 0;
  for (double v : nll) mean += v;
  mean /= double(nll.size());
  CHECK(r.nll == doctest::Approx(mean).epsilon(1e-4));
  CHECK(r.perplexity() == doctest::Approx(std::exp(mean)).epsilon(1e-4));
  CHECK(r.nll_stderr > 0);

  PerplexityResult two = perplexity(engine, tokens, PerplexityOptions{.context = kContext, .max_chunks = 2, .bos = 1});
  CHECK(two.chunks == 2);
  std::string text = kdsl_test::error_text([&] { perplexity(engine, text_tokens(kContext - 1, 512), o); });
  CHECK(kdsl_test::contains(text, "the text has 15 tokens, fewer than one chunk of 16"));
}

TEST_CASE("perplexity: KL divergence of a quantized copy against the base's saved log-probabilities") {
  ModelWeights base_model = load_model_weights(model_file("ppl_base.gguf", GgmlType::F32));
  ModelWeights q8 = load_model_weights(model_file("ppl_q8_0.gguf", GgmlType::Q8_0));
  ModelWeights q4 = load_model_weights(model_file("ppl_q4_0.gguf", GgmlType::Q4_0));
  std::vector<int> tokens = text_tokens(4 * kContext, int(base_model.hparams.n_vocab));
  PerplexityOptions o{.context = kContext, .max_chunks = 0, .bos = 1};
  const int rows = kContext - 1 - kContext / 2;
  std::string saved = test::scratch_path("ppl_base.logp");
  {
    Engine engine = make_engine(base_model);
    LogProbWriter writer(saved, LogProbHeader{uint32_t(engine.vocab()), kContext, 4, uint32_t(rows)}, tokens);
    perplexity(engine, tokens, o, &writer);
    writer.finish();
  }
  LogProbFile base(saved);
  CHECK(base.header().chunks == 4);

  // The base against itself: no divergence, the same top token everywhere.
  Engine same = make_engine(base_model);
  PerplexityResult self = perplexity(same, tokens, o, nullptr, &base);
  REQUIRE(self.divergence.size() == size_t(4 * rows));
  DivergenceSummary s = summarize(self.divergence);
  CHECK(s.max < 1e-6);  // the saved log-probabilities are rounded to f32
  CHECK(s.top1_agreement == 1.0);
  CHECK(*self.base_nll == doctest::Approx(self.nll).epsilon(1e-6));

  // Quantized copies: KLD above 0, Q4_0 further than Q8_0; one token's figure recomputed
  // directly from the two models' logits.
  Engine e8 = make_engine(q8), e4 = make_engine(q4);
  DivergenceSummary d8 = summarize(perplexity(e8, tokens, o, nullptr, &base).divergence);
  PerplexityResult r4 = perplexity(e4, tokens, o, nullptr, &base);
  DivergenceSummary d4 = summarize(r4.divergence);
  CHECK(d8.mean > 0);
  CHECK(d4.mean > d8.mean);
  CHECK(d8.median <= d8.p99);
  CHECK(d8.p99 <= d8.max);
  Engine b = make_engine(base_model), q = make_engine(q4);
  std::vector<int> chunk(tokens.begin() + kContext, tokens.begin() + 2 * kContext);  // chunk 1
  chunk[0] = 1;
  std::span<const float> lb = b.forward_rows(chunk, 0);
  std::vector<float> base_logits(lb.begin(), lb.end());
  std::span<const float> lq = q.forward_rows(chunk, 0);
  int vocab = b.vocab(), j = kContext / 2 + 2;
  auto log_probs = [&](const float *l) {
    std::vector<double> out(static_cast<size_t>(vocab));
    double max = *std::max_element(l, l + vocab), sum = 0;
    for (int i = 0; i < vocab; ++i) sum += std::exp(double(l[i]) - max);
    for (int i = 0; i < vocab; ++i) out[size_t(i)] = double(l[i]) - max - std::log(sum);
    return out;
  };
  std::vector<double> p = log_probs(base_logits.data() + size_t(j) * vocab), lq4 = log_probs(lq.data() + size_t(j) * vocab);
  double kld = 0;
  for (int i = 0; i < vocab; ++i) kld += std::exp(p[size_t(i)]) * (p[size_t(i)] - lq4[size_t(i)]);
  CHECK(r4.divergence[size_t(rows + j - kContext / 2)].kld == doctest::Approx(kld).epsilon(1e-4));
}

TEST_CASE("perplexity: a saved file that does not match is refused, naming it") {
  ModelWeights model = load_model_weights(model_file("ppl_mismatch.gguf", GgmlType::F32));
  std::vector<int> tokens = text_tokens(2 * kContext, int(model.hparams.n_vocab));
  PerplexityOptions o{.context = kContext, .max_chunks = 0, .bos = 1};
  std::string saved = test::scratch_path("ppl_mismatch.logp");
  {
    Engine engine = make_engine(model);
    LogProbWriter writer(saved, LogProbHeader{uint32_t(engine.vocab()), kContext, 2, uint32_t(kContext - 1 - kContext / 2)}, tokens);
    perplexity(engine, tokens, o, &writer);
    writer.finish();
  }
  Engine engine = make_engine(model);
  LogProbFile base(saved);
  std::vector<int> other = tokens;
  other[20] = (other[20] + 1) % 512;
  std::string text = kdsl_test::error_text([&] { perplexity(engine, other, o, nullptr, &base); });
  CHECK(kdsl_test::contains(text, "ppl_mismatch.logp: token 20 of the text is"));
  text = kdsl_test::error_text([&] { perplexity(engine, tokens, PerplexityOptions{.context = 8, .bos = 1}, nullptr, &base); });
  CHECK(kdsl_test::contains(text, "saved for vocab 512, context 16"));

  // Truncated, or not such a file at all: an error naming the file, never a read past the end.
  std::ifstream in(saved, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string cut = test::scratch_path("ppl_cut.logp");
  std::ofstream(cut, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size() - 7));
  text = kdsl_test::error_text([&] { LogProbFile f(cut); });
  CHECK(kdsl_test::contains(text, "ppl_cut.logp"));
  CHECK(kdsl_test::contains(text, "log_probs"));
  std::string wrong = test::scratch_path("ppl_wrong.logp");
  std::ofstream(wrong, std::ios::binary) << "GGUF and then some more bytes";
  text = kdsl_test::error_text([&] { LogProbFile f(wrong); });
  CHECK(kdsl_test::contains(text, "not a kdsl log-probability file"));

  // A writer that is not finished leaves nothing behind.
  std::string unfinished = test::scratch_path("ppl_unfinished.logp");
  { LogProbWriter w(unfinished, LogProbHeader{512, kContext, 2, 7}, tokens); }
  CHECK(!std::ifstream(unfinished).good());
  CHECK(!std::ifstream(unfinished + ".tmp").good());
}
