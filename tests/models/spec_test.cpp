// spec_test.cpp - speculative decoding: multi-row logits, drafters, greedy identity with plain decoding, the rejection rule's exactness
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>

#include <kdsl/kdsl.h>

#include "models/engine/engine.h"
#include "models/engine/generator.h"
#include "models/gguf/dequantize.h"
#include "models/gguf/gguf_file.h"
#include "models/gguf/quantize.h"
#include "models/spec/draft_length.h"
#include "models/spec/model_drafter.h"
#include "models/spec/ngram_drafter.h"
#include "models/spec/self_draft.h"
#include "models/spec/verify.h"
#include "models/synth/synth_model.h"
#include "tests/models/shared_models.h"
#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl::models;

namespace {

double relative_error(std::span<const float> got, std::span<const float> want) {
  double scale = 0, worst = 0;
  for (float w : want) scale = std::max(scale, double(std::fabs(w)));
  for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - double(want[i])));
  return worst / scale;
}

std::string synthetic(SynthConfig c, const std::string &name) {
  std::string path = test::scratch_path(name);
  write_synthetic_model(c, path);
  return path;
}

// Chi-square critical value at p = 0.001 (Wilson-Hilferty); seeds are fixed, so a pass is
// deterministic, and a wrong rule overshoots it by far (checked below).
double critical(int df) {
  double a = 2.0 / (9.0 * df);
  return df * std::pow(1 - a + 3.09 * std::sqrt(a), 3);
}

// Pearson's statistic of `counts` against probabilities `p` over n draws; cells expected
// fewer than 5 times are pooled into one. A draw where p is 0 is infinite.
double chi_square(const std::vector<int64_t> &counts, const std::vector<double> &p, int64_t n, int *df) {
  double stat = 0, pooled_e = 0, pooled_c = 0;
  *df = -1;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] <= 0) {
      if (counts[i] > 0) return INFINITY;
      continue;
    }
    double e = p[i] * double(n);
    if (e < 5) {
      pooled_e += e, pooled_c += double(counts[i]);
      continue;
    }
    ++*df;
    stat += (double(counts[i]) - e) * (double(counts[i]) - e) / e;
  }
  if (pooled_e > 0) ++*df, stat += (pooled_c - pooled_e) * (pooled_c - pooled_e) / pooled_e;
  return stat;
}

GenerationResult run(Engine &engine, const Tokenizer &tok, const std::vector<int> &prompt, int n, SamplerParams sp, Drafter *drafter = nullptr,
                     SpecOptions spec = {}, bool ignore_eos = false) {
  Sampler sampler(sp);
  GenerateOptions o;
  o.max_tokens = n;
  o.ignore_eos = ignore_eos;
  o.drafter = drafter;
  o.spec = spec;
  return generate(engine, tok, sampler, prompt, o);
}

// Greedy generation with each drafter and draft-length setting gives the plain ids, token
// for token and with the same stop; the drafters must also have been checked at all.
void check_greedy_identity(const std::string &target_path, const Tokenizer &tok, const std::vector<int> &prompt, int n,
                           const std::vector<std::string> &draft_paths, int page_size = 4, const std::vector<SelfDraftOptions> &self_drafts = {}) {
  ModelWeights target = load_model_weights(target_path);
  EngineOptions eo{.context = 160, .page_size = page_size, .max_batch = 5, .max_logit_rows = 8};
  Engine engine(target, Device::cpu(), eo);
  for (float penalty : {1.0f, 1.3f}) {
    SamplerParams sp{.temperature = 0, .repetition_penalty = penalty};
    GenerationResult plain = run(engine, tok, prompt, n, sp);
    CAPTURE(penalty);
    REQUIRE(plain.generated_ids.size() > 8);
    std::vector<std::unique_ptr<Drafter>> drafters;
    std::vector<bool> target_drafts;  // the target itself drafting, in a chain
    std::vector<std::unique_ptr<ModelWeights>> draft_models;
    drafters.push_back(std::make_unique<NgramDrafter>());
    drafters.push_back(std::make_unique<NgramDrafter>(1, 4, 3));  // token trees of up to 3 continuations
    target_drafts.assign(2, false);
    auto add_model_drafters = [&](bool is_target) {
      const EngineOptions de{.context = 160, .page_size = page_size};
      drafters.push_back(std::make_unique<ModelDrafter>(*draft_models.back(), engine.vocab(), Device::cpu(), de, sp));
      // A tree of the draft's 3 likeliest tokens at each position, the likeliest paths kept.
      drafters.push_back(std::make_unique<ModelDrafter>(*draft_models.back(), engine.vocab(), Device::cpu(), de, sp, ModelDrafterOptions{.branches = 3}));
      target_drafts.push_back(is_target), target_drafts.push_back(false);
    };
    for (const std::string &path : draft_paths) {
      draft_models.push_back(std::make_unique<ModelWeights>(load_model_weights(path)));
      add_model_drafters(path == target_path);
    }
    for (const SelfDraftOptions &so : self_drafts) {
      draft_models.push_back(std::make_unique<ModelWeights>(self_draft_weights(target, so)));
      add_model_drafters(false);
    }
    for (size_t d = 0; d < drafters.size(); ++d) {
      CAPTURE(d);
      CAPTURE(drafters[d]->name());
      for (SpecOptions spec : {SpecOptions{.draft_max = 3, .adaptive = false}, SpecOptions{.draft_max = 7, .adaptive = false},
                               SpecOptions{.draft_max = 7, .draft_min = 2, .adaptive = true}}) {
        CAPTURE(spec.draft_max);
        CAPTURE(spec.adaptive);
        GenerationResult r = run(engine, tok, prompt, n, sp, drafters[d].get(), spec);
        CHECK(r.generated_ids == plain.generated_ids);
        CHECK(r.stop_reason == plain.stop_reason);
        CHECK(r.text == plain.text);
        if (d > 1 || !spec.adaptive) CHECK(r.spec_checks > 0);
        int64_t histogram_total = 0, histogram_accepted = 0;
        for (size_t j = 0; j < r.spec_accepted_histogram.size(); ++j)
          histogram_total += r.spec_accepted_histogram[j], histogram_accepted += int64_t(j) * r.spec_accepted_histogram[j];
        CHECK(histogram_total == r.spec_checks);
        CHECK(histogram_accepted == r.spec_accepted);
        CHECK(r.spec_accepted <= r.spec_drafted);
        // The target drafting for itself is kept (bar a float near-tie between its one-row and
        // several-row products): the accept path, the bonus token and the caches' lockstep. Not
        // with the adaptive length, whose choices follow measured times: fewer drafts on a busy
        // machine make the same near-ties a larger share.
        if (!spec.adaptive && target_drafts[d]) CHECK(r.spec_accepted * 10 >= r.spec_drafted * 9);
      }
    }
  }
}

// A prompt that repeats itself (n-gram lookup finds drafts in it) and crosses pages of 4.
std::vector<int> repetitive_prompt(int vocab) {
  std::vector<int> p = {1};
  for (int rep = 0; rep < 3; ++rep)
    for (int i = 0; i < 5; ++i) p.push_back(3 + (i * 37 + 11) % (vocab - 3));
  return p;
}

}  // namespace

TEST_CASE("spec: forward_rows gives every row's logits as one-at-a-time decoding does, and a rollback is a lower position") {
  SynthConfig c = synth_preset("tiny");  // grouped-query attention
  ModelWeights model = load_model_weights(synthetic(c, "spec-rows.gguf"));
  // Chunks of 3 and pages of 4: the checked rows cross both.
  Engine rows(model, Device::cpu(), EngineOptions{.context = 64, .page_size = 4, .max_batch = 3, .max_logit_rows = 8});
  std::vector<int> prompt = {1, 40, 300, 7, 99, 12, 450, 3, 3, 81, 5};
  std::vector<int> next = {17, 230, 5, 5, 401, 77, 2};
  auto one_at_a_time = [&](const std::vector<int> &tail) {
    Engine plain(model, Device::cpu(), EngineOptions{.context = 64, .page_size = 4});
    plain.forward(prompt, 0);
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < tail.size(); ++i) {
      int t[1] = {tail[i]};
      auto l = plain.forward(t, int(prompt.size() + i));
      out.emplace_back(l.begin(), l.end());
    }
    return out;
  };
  rows.forward(prompt, 0);
  auto got = rows.forward_rows(next, int(prompt.size()));
  REQUIRE(got.size() == next.size() * size_t(rows.vocab()));
  auto want = one_at_a_time(next);
  for (size_t i = 0; i < next.size(); ++i) {
    CAPTURE(i);
    CHECK(relative_error(got.subspan(i * size_t(rows.vocab()), size_t(rows.vocab())), want[i]) < 1e-4);
  }
  // Keep two of the rows and rewrite the rest from there with other tokens.
  std::vector<int> other = {9, 300, 44, 1};
  auto again = rows.forward_rows(other, int(prompt.size()) + 2);
  std::vector<int> tail = {next[0], next[1]};
  tail.insert(tail.end(), other.begin(), other.end());
  want = one_at_a_time(tail);
  for (size_t i = 0; i < other.size(); ++i) {
    CAPTURE(i);
    CHECK(relative_error(again.subspan(i * size_t(rows.vocab()), size_t(rows.vocab())), want[i + 2]) < 1e-4);
  }
  // forward() is still the last row alone.
  CHECK(rows.forward(std::span<const int>(other.data(), 1), int(prompt.size()) + 2).size() == size_t(rows.vocab()));
  std::vector<int> nine(9, 5);
  CHECK_THROWS_WITH_AS(rows.forward_rows(nine, 0), doctest::Contains("logits for at most 8 rows"), Error);
  CHECK_THROWS_WITH_AS(Engine(model, Device::cpu(), EngineOptions{.context = 64, .max_logit_rows = 0}),
                       doctest::Contains("rows of logits per forward pass: expected 1 to 1024, got 0"), Error);
}

TEST_CASE("spec: forward_tree gives each node the logits of its own branch run alone, and keep_branch continues from it") {
  for (int page_size : {4, 16}) {
    CAPTURE(page_size);
    SynthConfig c = synth_preset("tiny");
    ModelWeights model = load_model_weights(synthetic(c, "spec-tree-tiny.gguf"));
    EngineOptions eo{.context = 64, .page_size = page_size, .max_batch = 16, .max_logit_rows = 16};
    Engine tree_engine(model, Device::cpu(), eo), chain_engine(model, Device::cpu(), eo);
    const std::vector<int> prompt = {1, 40, 41, 42, 43, 44, 45, 46, 47};  // 9 tokens: the tree starts inside a page
    const int pos = int(prompt.size());
    // Node 0 is the root (the next token); siblings at several depths.
    const std::vector<int> tokens = {50, 60, 61, 70, 71, 72, 80, 90, 91, 100, 101, 102};
    const std::vector<int> parents = {-1, 0, 0, 1, 1, 2, 3, 6, 6, 4, 9, 10};
    tree_engine.forward(prompt, 0);
    std::span<const float> tree_rows = tree_engine.forward_tree(tokens, parents, pos);
    std::vector<float> rows(tree_rows.begin(), tree_rows.end());
    const size_t vocab = size_t(tree_engine.vocab());
    auto branch_to = [&](int node) {
      std::vector<int> b;
      for (int n = node; n >= 0; n = parents[size_t(n)]) b.insert(b.begin(), n);
      return b;
    };
    for (int node = 0; node < int(tokens.size()); ++node) {
      CAPTURE(node);
      std::vector<int> chain;
      for (int n : branch_to(node)) chain.push_back(tokens[size_t(n)]);
      chain_engine.forward(prompt, 0);
      std::span<const float> want = chain_engine.forward_rows(chain, pos);
      CHECK(relative_error(std::span<const float>(rows).subspan(size_t(node) * vocab, vocab), want.subspan((chain.size() - 1) * vocab, vocab)) < 1e-5);
    }
    // Keep the deepest branch that is not in place (nodes 0, 1, 4, 9, 10, 11), then decode on.
    std::vector<int> branch = branch_to(11);
    tree_engine.keep_branch(branch, pos);
    std::vector<int> chain;
    for (int n : branch) chain.push_back(tokens[size_t(n)]);
    chain_engine.forward(prompt, 0);
    chain_engine.forward_rows(chain, pos);
    int next[2] = {120, 121};
    std::span<const float> got = tree_engine.forward_rows(next, pos + int(chain.size()));
    std::vector<float> got_rows(got.begin(), got.end());
    std::span<const float> want = chain_engine.forward_rows(next, pos + int(chain.size()));
    CHECK(relative_error(got_rows, want) < 1e-5);
  }
  SynthConfig c = synth_preset("tiny");
  ModelWeights model = load_model_weights(synthetic(c, "spec-tree-tiny.gguf"));
  Engine engine(model, Device::cpu(), EngineOptions{.context = 64, .max_logit_rows = 8});
  std::vector<int> tokens = {5, 6, 7}, bad_parents = {-1, 0, 2};
  std::string text = kdsl_test::error_text([&] { engine.forward_tree(tokens, bad_parents, 0); });
  CHECK(kdsl_test::contains(text, "node 2 has parent 2; a parent must be an earlier node"));
  std::vector<int> backwards = {0, 2, 1};
  text = kdsl_test::error_text([&] { engine.keep_branch(backwards, 0); });
  CHECK(kdsl_test::contains(text, "keep_branch: node 1 follows node 2"));
}

TEST_CASE("spec: an n-gram tree holds the continuations of several matches, merged where they agree") {
  NgramDrafter tree(1, 4, 3);
  Draft d;
  // "7 8" occurs three times, followed by 9 10, by 9 11 and by 12: the latest match (9 11)
  // comes first, the others branch off where they part from it.
  std::vector<int> text = {7, 8, 9, 10, 5, 7, 8, 12, 6, 7, 8, 9, 11, 4, 7, 8};
  tree.draft(text, 8, d);
  REQUIRE(d.is_tree());
  REQUIRE(d.tokens.size() == d.parents.size());
  CHECK(d.tokens[0] == 9);
  CHECK(d.tokens[1] == 11);
  CHECK(d.parents[1] == 0);
  std::map<std::pair<int, int>, int> children;  // (parent, token) -> count: siblings are distinct
  for (size_t i = 0; i < d.tokens.size(); ++i) {
    CHECK(d.parents[i] < int(i));
    CHECK(++children[{d.parents[i], d.tokens[i]}] == 1);
  }
  bool has_12 = false, has_9_10 = false;
  for (size_t i = 0; i < d.tokens.size(); ++i) {
    has_12 |= d.parents[i] == -1 && d.tokens[i] == 12;
    has_9_10 |= d.parents[i] == 0 && d.tokens[i] == 10;
  }
  CHECK(has_12);
  CHECK(has_9_10);
  CHECK(d.tokens.size() <= 8);
  // One match only: a chain, as the plain drafter gives.
  NgramDrafter chain;
  Draft one, plain;
  std::vector<int> periodic = {3, 4, 5, 3, 4};
  tree.draft(periodic, 5, one);
  chain.draft(periodic, 5, plain);
  CHECK(!one.is_tree());
  CHECK(one.tokens == plain.tokens);
}

TEST_CASE("spec: a draft model's tree drafts the paths likeliest to be kept by its ranks' measured rates, learns them, and stops its chain at --draft-p-min") {
  SynthConfig c = synth_preset("tiny");
  std::string path = synthetic(c, "spec-tree-tiny.gguf");
  ModelWeights model = load_model_weights(path);
  const int vocab = int(model.hparams.n_vocab), max = 6, branches = 3;
  const EngineOptions eo{.context = 96, .page_size = 4};
  SamplerParams sp{.temperature = 0};
  ModelDrafter drafter(model, vocab, Device::cpu(), eo, sp, ModelDrafterOptions{.branches = branches});
  CHECK(drafter.name() == "draft model tree");
  std::vector<double> rates = drafter.rank_rates();  // the prior
  REQUIRE(rates.size() == size_t(branches) + 1);
  CHECK(rates[0] > rates[1]);
  CHECK(rates[1] > rates[2]);
  std::vector<int> text = repetitive_prompt(vocab);
  Draft d;
  drafter.draft(text, max, d);
  REQUIRE(d.is_tree());
  REQUIRE(d.tokens.size() == size_t(max));
  REQUIRE(d.parents.size() == d.tokens.size());
  CHECK(d.q.empty());  // chosen outright
  std::map<std::pair<int, int>, int> children;
  std::vector<std::vector<int>> drafted_paths;
  for (size_t i = 0; i < d.tokens.size(); ++i) {
    CHECK(d.parents[i] < int(i));
    CHECK(++children[{d.parents[i], d.tokens[i]}] == 1);
    std::vector<int> p = d.parents[i] < 0 ? std::vector<int>() : drafted_paths[size_t(d.parents[i])];
    p.push_back(d.tokens[i]);
    drafted_paths.push_back(p);
  }
  // The reference: the same model run along its likeliest chain; each position's 3 likeliest
  // tokens a candidate, its chance the product of its path's ranks' rates; the 6 likeliest.
  Engine reference(model, Device::cpu(), eo);
  Sampler softmax(SamplerParams{.temperature = 1});
  std::vector<float> p;
  auto ranking = [&](std::span<const float> logits) {
    softmax.compute_probabilities(logits, p);
    std::vector<int> order(p.size());
    for (size_t t = 0; t < order.size(); ++t) order[t] = int(t);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[size_t(a)] > p[size_t(b)]; });
    return order;
  };
  std::vector<std::pair<double, std::vector<int>>> candidates;
  std::vector<int> chain;
  double chain_chance = 1;
  std::span<const float> logits = reference.forward(text, 0);
  const std::vector<int> first_ranking = ranking(logits);
  for (int depth = 0; depth < max; ++depth) {
    const std::vector<int> order = ranking(logits);
    for (int r = 0; r < branches; ++r) {
      std::vector<int> candidate = chain;
      candidate.push_back(order[size_t(r)]);
      candidates.emplace_back(chain_chance * rates[size_t(r)], candidate);
    }
    chain.push_back(order[0]);
    chain_chance *= rates[0];
    int one[1] = {order[0]};
    logits = reference.forward(one, int(text.size()) + depth);
  }
  std::stable_sort(candidates.begin(), candidates.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
  REQUIRE(candidates[size_t(max) - 1].first > candidates[size_t(max)].first * 1.001);  // no tie at the cut
  std::vector<std::vector<int>> want;
  for (int i = 0; i < max; ++i) want.push_back(candidates[size_t(i)].second);
  std::sort(want.begin(), want.end());
  std::sort(drafted_paths.begin(), drafted_paths.end());
  CHECK(drafted_paths == want);
  CHECK(d.tokens[0] == chain[0]);

  // The target takes the draft's second choice every time: that rank's rate passes the first's,
  // and the tree's likeliest node is the second choice at the text's end.
  std::vector<int> order = first_ranking;
  logits = reference.forward(text, 0);
  for (int step = 0; step < 40; ++step) {
    text.push_back(order[1]);
    drafter.draft(text, max, d);
    int one[1] = {order[1]};
    logits = reference.forward(one, int(text.size()) - 1);
    order = ranking(logits);
  }
  rates = drafter.rank_rates();
  CHECK(rates[1] > 0.5);
  CHECK(rates[1] > rates[0]);
  drafter.draft(text, max, d);
  REQUIRE(!d.tokens.empty());
  CHECK(d.tokens[0] == order[1]);
  CHECK(std::count(d.parents.begin(), d.parents.end(), -1) >= 2);

  // A chain that may not go on past a position offers that position's likeliest tokens alone.
  text = repetitive_prompt(vocab);
  ModelDrafter unsure(model, vocab, Device::cpu(), eo, sp, ModelDrafterOptions{.p_min = 1.0f, .branches = branches});
  unsure.draft(text, max, d);
  REQUIRE(d.tokens.size() == size_t(branches));
  CHECK(d.parents == std::vector<int>(size_t(branches), -1));
  CHECK(d.tokens[0] == chain[0]);
  // One branch a position is the chain drafter's own greedy chain.
  ModelDrafter one_branch(model, vocab, Device::cpu(), eo, sp);
  one_branch.draft(text, max, d);
  CHECK(!d.is_tree());
  CHECK(d.tokens == chain);
  std::string error = kdsl_test::error_text([&] { ModelDrafter(model, vocab, Device::cpu(), eo, sp, ModelDrafterOptions{.branches = 0}); });
  CHECK(error.find("--draft-branches 0: expected 1") != std::string::npos);
}

TEST_CASE("spec: n-gram drafter drafts what followed the latest, longest match") {
  NgramDrafter ngram;
  Draft d;
  // "5 6" occurred twice; the latest occurrence (followed by 9) wins over the first (by 7).
  std::vector<int> text = {1, 5, 6, 7, 2, 5, 6, 9, 4, 5, 6};
  ngram.draft(text, 3, d);
  CHECK(d.tokens == std::vector<int>{9, 4, 5});
  CHECK(d.q.empty());
  // A longer match beats a later shorter one: "3 5 6" matched at the start, not "5 6" later.
  text = {3, 5, 6, 8, 5, 6, 2, 3, 5, 6};
  ngram.draft(text, 2, d);
  CHECK(d.tokens == std::vector<int>{8, 5});
  // A periodic text drafts full length: the continuation reads its own drafts.
  text = {1, 2, 3, 1, 2, 3, 1, 2};
  ngram.draft(text, 7, d);
  CHECK(d.tokens == std::vector<int>{3, 1, 2, 3, 1, 2, 3});
  // Nothing to find: no draft.
  text = {1, 2, 3, 4};
  ngram.draft(text, 4, d);
  CHECK(d.tokens.empty());
  NgramDrafter bigrams(2, 3);
  text = {4, 7, 1, 2, 7};  // "7" recurs, but bigrams only: no draft
  bigrams.draft(text, 4, d);
  CHECK(d.tokens.empty());
  CHECK_THROWS_WITH_AS(NgramDrafter(0, 3), doctest::Contains("expected 1 <= min <= max"), Error);
}

TEST_CASE("spec: the rejection rule samples the target's distribution whatever the draft's, and a wrong rule fails the test") {
  const std::vector<float> logits = {2.0f, 1.0f, 0.5f, 0.0f, -1.0f, 3.0f};
  std::vector<double> p(logits.size());
  double total = 0;
  for (size_t i = 0; i < p.size(); ++i) total += p[i] = std::exp(double(logits[i]));
  for (double &x : p) x /= total;
  // A draft distribution far from p: favours what p does not, and misses id 5 entirely.
  const std::vector<float> q = {0.05f, 0.1f, 0.4f, 0.3f, 0.15f, 0.0f};
  const int n = 20000;
  Rng draft_rng(99);
  auto draw_q = [&](const std::vector<float> &dist) {
    double u = draft_rng.uniform(), c = 0;
    for (size_t i = 0; i < dist.size(); ++i)
      if (u < (c += dist[i])) return int(i);
    return int(dist.size()) - 1;
  };
  std::vector<float> scratch;
  auto statistic = [&](auto &&rule) {
    Sampler s(SamplerParams{.temperature = 1.0f, .seed = 7});
    std::vector<int64_t> counts(p.size(), 0);
    for (int i = 0; i < n; ++i) ++counts[size_t(rule(s))];
    int df = 0;
    double stat = chi_square(counts, p, n, &df);
    return stat / critical(df);  // < 1 passes
  };
  // Drafted from q; drafted outright (a point mass, as n-gram drafts are), always id 2.
  double sampled = statistic([&](Sampler &s) {
    int d = draw_q(q);
    return verify_draft(s, logits, d, q, scratch).token;
  });
  double point = statistic([&](Sampler &s) { return verify_draft(s, logits, 2, {}, scratch).token; });
  CHECK(sampled < 1.0);
  CHECK(point < 1.0);
  // The test has the power to see a wrong rule: resampling from p instead of the residual,
  // and accepting with min(1, p / q) but ignoring q in the residual for the point mass
  // (resampling p with the draft still in it), both fail it.
  double from_p = statistic([&](Sampler &s) {
    int d = draw_q(q);
    std::vector<float> probs;
    s.compute_probabilities(logits, probs);
    if (s.rng().uniform() * q[size_t(d)] < probs[size_t(d)]) return d;
    return s.sample_from(probs);
  });
  double point_from_p = statistic([&](Sampler &s) {
    std::vector<float> probs;
    s.compute_probabilities(logits, probs);
    if (s.rng().uniform() < probs[2]) return 2;
    return s.sample_from(probs);
  });
  CHECK(from_p > 3.0);
  CHECK(point_from_p > 3.0);
  // Greedy: accepted iff the argmax, which is returned either way; no random numbers used.
  Sampler greedy(SamplerParams{.temperature = 0});
  DraftVerdict v = verify_draft(greedy, logits, 5, {}, scratch);
  CHECK(v.accepted);
  CHECK(v.token == 5);
  v = verify_draft(greedy, logits, 0, q, scratch);
  CHECK(!v.accepted);
  CHECK(v.token == 5);
}

TEST_CASE("spec: the draft length follows the acceptance rate and turns speculation off where it costs") {
  CHECK_THROWS_WITH_AS(DraftLength(SpecOptions{.draft_max = 0}), doctest::Contains("--draft-max 0: expected 1 to 1023"), Error);
  CHECK_THROWS_WITH_AS(DraftLength(SpecOptions{.draft_max = 4, .draft_min = 5}), doctest::Contains("--draft-min 5: expected 0 to --draft-max (4)"),
                       Error);
  // Every draft kept, extra rows cheap (10 ms + 1 ms a row): the longest drafts.
  DraftLength good(SpecOptions{.draft_max = 8});
  for (int i = 0; i < 30; ++i) {
    int k = good.next();
    REQUIRE(k >= 1);
    good.record(k, k, k, 10.0 + k, 0.1 * k);
  }
  CHECK(good.next() == 8);
  CHECK(good.acceptance_rate() > 0.9);
  // No draft kept, and a draft model costing half a target pass per token: plain steps, with
  // a probe of a single draft after kProbeEvery of them, then 2x, 4x ... as many.
  DraftLength bad(SpecOptions{.draft_max = 8});
  int plain = 0, probes = 0;
  for (int i = 0; i < 200; ++i) {
    int k = bad.next();
    if (k == 0) {
      ++plain;
      bad.record(0, 0, 0, 10.0, 0);
    } else {
      ++probes;
      bad.record(k, k, 0, 10.0 + k, 5.0 * k);
    }
  }
  CHECK(bad.acceptance_rate() < 0.2);
  CHECK(plain > 170);
  CHECK(probes >= 2);  // after 16, 32 and 64 plain steps: the rate is still looked at
  CHECK(probes <= 5);  // but not every 16 steps (12 probes)
  // Every draft kept, but a drafter slower than the target: off, whatever the rate, and
  // probed only every kProbeEveryMax steps (a draft model catches up on every token since its
  // last draft, so each probe costs).
  DraftLength slow(SpecOptions{.draft_max = 8});
  int checks = 0;
  for (int i = 0; i < 300; ++i) {
    int k = slow.next();
    checks += k > 0;
    if (k > 0) slow.record(k, k, k, 10.0 + k, 20.0 * k);
    else slow.record(0, 0, 0, 10.0, 0);
  }
  CHECK(slow.acceptance_rate() > 0.7);
  CHECK(checks <= 3);
  CHECK(bad.speedup(1) < 1.0);
  // Costs in power-of-two blocks of rows, as the few-rows kernels have them: 2 rows cost
  // nearly two passes, 8 rows two and a half. Drafts that are kept find the long drafts all
  // the same (a straight line through the short lengths' times would never try them).
  auto blocked_ms = [](int k) { return k == 0 ? 10.0 : k == 1 ? 18.0 : k <= 3 ? 22.0 : 25.0; };
  DraftLength blocked(SpecOptions{.draft_max = 7});
  for (int i = 0; i < 40; ++i) {
    int k = blocked.next();
    blocked.record(k, k, k, blocked_ms(k), 0.01 * k);
  }
  CHECK(blocked.next() == 7);
  // Fixed length when not adaptive.
  DraftLength fixed(SpecOptions{.draft_max = 5, .adaptive = false});
  fixed.record(5, 5, 0, 10, 0);
  CHECK(fixed.next() == 5);
}

// Accepts each draft with probability `rate` until the first rejection, from a fixed stream.
struct SimulatedDrafts {
  uint64_t state = 0x9e3779b97f4a7c15ull;
  int kept(int drafted, double rate) {
    int accepted = 0;
    while (accepted < drafted) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      if (double(state >> 11) * 0x1p-53 >= rate) break;
      ++accepted;
    }
    return accepted;
  }
};

TEST_CASE("spec: the draft length weighs a drafter's fixed cost, and asks that propose nothing") {
  // A draft model: 4 ms to catch up on the last check's tokens, then 5.5 ms a token; the
  // target's pass 13 ms and 1.3 ms an extra row; 90% of drafts kept. Tokens per ms over a
  // plain step's: 1.04 at k = 1, 1.15 at 2, 1.195 at 3, 1.205 at 4, 1.195 at 5, 1.18 at 6. A
  // cost per token through zero (9.5 ms a token, from k = 1) would never leave k = 1.
  auto ratio = [](int k) { return (1 - std::pow(0.9, k + 1)) / 0.1 * 13.0 / (17.0 + 6.8 * k); };
  DraftLength lengths(SpecOptions{.draft_max = 8});
  SimulatedDrafts drafts;
  std::vector<int> chosen;
  for (int i = 0; i < 200; ++i) {
    int k = lengths.next();
    chosen.push_back(k);
    if (k == 0) lengths.record(0, 0, 0, 13.0, 0);
    else lengths.record(k, k, drafts.kept(k, 0.9), 13.0 + 1.3 * k, 4.0 + 5.5 * k);
  }
  int late_good = 0;
  for (size_t i = 100; i < chosen.size(); ++i) late_good += ratio(chosen[i]) >= 1.18;
  CHECK(late_good >= 90);  // of the last 100 steps: k from 3 to 6
  CHECK(lengths.speedup(4) == doctest::Approx(ratio(4)).epsilon(0.1));

  // A draft model below --draft-p-min at nearly every token: each ask costs its catch-up (6
  // ms) and proposes nothing. Speculation turns itself off (before, such asks were never
  // counted, and every step paid 6 ms on top of a 13 ms pass).
  DraftLength unsure(SpecOptions{.draft_max = 8});
  int asks = 0;
  for (int i = 0; i < 300; ++i) {
    int k = unsure.next();
    asks += k > 0;
    if (k == 0) unsure.record(0, 0, 0, 13.0, 0);
    else unsure.record(k, 0, 0, 13.0, 6.0);
  }
  CHECK(unsure.empty_rate() > 0.5);
  CHECK(unsure.speedup(1) < 1.0);
  CHECK(asks <= 12);

  // n-gram lookup: half the asks find no match, at no cost, and what it proposes is kept.
  // Asking stays on at every step: an empty ask is just a plain pass.
  DraftLength lookup(SpecOptions{.draft_max = 8});
  int plain_steps = 0;
  for (int i = 0; i < 200; ++i) {
    int k = lookup.next();
    plain_steps += k == 0;
    if (k == 0) lookup.record(0, 0, 0, 13.0, 0);
    else if (i % 2) lookup.record(k, 0, 0, 13.0, 0.01);
    else lookup.record(k, k, k, 13.0 + 0.5 * k, 0.01);
  }
  CHECK(lookup.empty_rate() > 0.3);
  CHECK(plain_steps == 0);
  CHECK(lookup.next() == 8);
}

TEST_CASE("spec: greedy speculative decoding gives plain decoding's tokens on synthetic llama, qwen2 and qwen3 models (GQA, f16, Q8_0)") {
  SynthConfig c = synth_preset("tiny");
  std::string target = synthetic(c, "spec-tiny.gguf");
  SynthConfig other = c;
  other.seed = 2;  // an unrelated draft: mostly rejected
  std::string unrelated = synthetic(other, "spec-tiny-seed2.gguf");
  SynthConfig q4 = c;
  q4.weight_type = q4.embedding_type = GgmlType::Q4_0;  // the target's own weights, quantized: mostly accepted
  std::string quantized = synthetic(q4, "spec-tiny-q4_0.gguf");
  auto tok = load_tokenizer(GgufFile(target));
  std::vector<int> prompt = repetitive_prompt(512);
  // Self-speculation too: the target's matrices requantized at load time, its first layer alone, both.
  check_greedy_identity(target, *tok, prompt, 40, {target, quantized, unrelated}, 4,
                        {SelfDraftOptions{.type = GgmlType::Q4_0}, SelfDraftOptions{.layers = 1}, SelfDraftOptions{.type = GgmlType::Q8_0, .layers = 1}});
  c.weight_type = GgmlType::F16;
  check_greedy_identity(synthetic(c, "spec-tiny-f16.gguf"), *tok, prompt, 40, {quantized});
  c.weight_type = c.embedding_type = GgmlType::Q8_0;
  check_greedy_identity(synthetic(c, "spec-tiny-q8_0.gguf"), *tok, prompt, 40, {unrelated}, 16);
  SynthConfig qwen2 = synth_preset("tiny");
  qwen2.hparams.arch = Arch::Qwen2;  // QKV biases, NeoX RoPE, a byte-level BPE vocabulary
  qwen2.hparams.rope_freq_base = 1000000.0f;
  std::string qwen2_path = synthetic(qwen2, "spec-qwen2.gguf");
  auto qwen2_tok = load_tokenizer(GgufFile(qwen2_path));
  check_greedy_identity(qwen2_path, *qwen2_tok, repetitive_prompt(int(qwen2.hparams.n_vocab)), 40, {}, 4, {SelfDraftOptions{.layers = 1}});
  SynthConfig qwen = synth_preset("qwen3-tiny");
  std::string qwen_path = synthetic(qwen, "spec-qwen3.gguf");
  qwen.weight_type = GgmlType::Q8_0;
  auto qwen_tok = load_tokenizer(GgufFile(qwen_path));
  // qwen3's tied embeddings: a requantized classifier is the token table too.
  check_greedy_identity(qwen_path, *qwen_tok, repetitive_prompt(int(qwen.hparams.n_vocab)), 40, {synthetic(qwen, "spec-qwen3-q8_0.gguf")}, 4,
                        {SelfDraftOptions{.type = GgmlType::Q4_0}});
}

TEST_CASE("spec: greedy speculative decoding gives plain decoding's tokens on aidreams260K and stories260K") {
  auto aidreams = test::shared_model("aidreams260K.bin");
  auto stories = test::shared_model("stories260K.bin");
  auto tok_path = test::shared_model("aidreams-tok512.bin");
  if (!aidreams || !stories || !tok_path) return;
  auto tok = load_tokenizer_bin(*tok_path, 512);
  // Each drafts for the other (same vocabulary size, different models), and for itself.
  check_greedy_identity(*aidreams, *tok, tok->encode("I dreamed", true), 60, {*aidreams, *stories});
  check_greedy_identity(*stories, *tok, {1}, 64, {*stories, *aidreams}, 8);
}

TEST_CASE("spec: at temperature > 0 the first tokens are distributed as plain sampling's, for each drafter") {
  SynthConfig c = synth_preset("tiny");
  std::string target_path = synthetic(c, "spec-chi-tiny.gguf");
  SynthConfig q4 = c;
  q4.weight_type = q4.embedding_type = GgmlType::Q4_0;  // close to the target: accepted often, not always
  std::string draft_path = synthetic(q4, "spec-chi-q4_0.gguf");
  ModelWeights target = load_model_weights(target_path), draft_model = load_model_weights(draft_path);
  auto tok = load_tokenizer(GgufFile(target_path));
  Engine engine(target, Device::cpu(), EngineOptions{.context = 64, .page_size = 4, .max_logit_rows = 4});
  std::vector<int> prompt = repetitive_prompt(512);
  // Three candidates a step, a temperature that keeps them close: 27 sequences of 3 tokens.
  SamplerParams sp{.temperature = 1.5f, .top_k = 3};
  // The exact joint distribution of the first three tokens, from the plain forward pass.
  std::map<std::vector<int>, double> joint;
  Sampler probe(sp);
  std::vector<float> p1, p2, p3;
  probe.compute_probabilities(engine.forward(prompt, 0), p1);
  for (int a = 0; a < 512; ++a) {
    if (p1[size_t(a)] == 0) continue;
    int ta[1] = {a};
    probe.compute_probabilities(engine.forward(ta, int(prompt.size())), p2);
    for (int b = 0; b < 512; ++b) {
      if (p2[size_t(b)] == 0) continue;
      int tb[1] = {b};
      probe.compute_probabilities(engine.forward(tb, int(prompt.size()) + 1), p3);
      for (int d = 0; d < 512; ++d)
        if (p3[size_t(d)] > 0) joint[{a, b, d}] = double(p1[size_t(a)]) * p2[size_t(b)] * p3[size_t(d)];
    }
  }
  REQUIRE(joint.size() == 27);
  std::vector<double> p;
  for (auto &[seq, prob] : joint) p.push_back(prob);
  // Drafted outright (point masses, as n-gram drafts are) and likely to be kept: the most
  // probable second and third tokens after the most probable first one.
  auto argmax = [](const std::vector<float> &v) { return int(std::max_element(v.begin(), v.end()) - v.begin()); };
  int likely[2];
  {
    int a[1] = {argmax(p1)};
    probe.compute_probabilities(engine.forward(a, int(prompt.size())), p2);
    likely[0] = argmax(p2);
    int b[1] = {likely[0]};
    probe.compute_probabilities(engine.forward(b, int(prompt.size()) + 1), p3);
    likely[1] = argmax(p3);
  }
  struct Scripted : Drafter {
    std::vector<int> tokens;
    void draft(std::span<const int>, int max, Draft &out) override {
      out.clear();
      out.tokens.assign(tokens.begin(), tokens.begin() + std::min<long>(max, long(tokens.size())));
    }
    std::string name() const override { return "scripted"; }
  } scripted;
  scripted.tokens = {likely[0], likely[1]};
  // A tree: the likely second token and another candidate for it, the likely third token
  // after the first: both rules of the walk (a second child tried after the first is
  // rejected, a child's child) decide the first three tokens.
  struct ScriptedTree : Drafter {
    std::vector<int> tokens, parents;
    void draft(std::span<const int>, int, Draft &out) override {
      out.clear();
      out.tokens = tokens, out.parents = parents;
    }
    std::string name() const override { return "scripted tree"; }
  } tree;
  {
    int a[1] = {argmax(p1)};
    probe.compute_probabilities(engine.forward(a, int(prompt.size())), p2);
    int other = -1;
    for (int t = 0; t < 512; ++t)
      if (p2[size_t(t)] > 0 && t != likely[0] && (other < 0 || p2[size_t(t)] > p2[size_t(other)])) other = t;
    tree.tokens = {likely[0], other, likely[1]};
    tree.parents = {-1, -1, 0};
  }
  NgramDrafter ngram, ngram_tree(1, 4, 3);
  ModelDrafter model_drafter(draft_model, engine.vocab(), Device::cpu(), EngineOptions{.context = 64, .page_size = 4}, sp);
  ModelDrafter model_tree(draft_model, engine.vocab(), Device::cpu(), EngineOptions{.context = 64, .page_size = 4}, sp, ModelDrafterOptions{.branches = 2});
  const int runs = 3000;
  for (Drafter *drafter : {static_cast<Drafter *>(&scripted), static_cast<Drafter *>(&model_drafter), static_cast<Drafter *>(&ngram),
                           static_cast<Drafter *>(&tree), static_cast<Drafter *>(&ngram_tree), static_cast<Drafter *>(&model_tree)}) {
    CAPTURE(drafter->name());
    std::map<std::vector<int>, int64_t> seen;
    int64_t drafted = 0, accepted = 0;
    for (int i = 0; i < runs; ++i) {
      sp.seed = uint64_t(i);
      // Four tokens: the first from the prompt's logits, then a check of two drafts, so the
      // second and third come from one chain (the second draft is checked only after the first is kept).
      GenerationResult r = run(engine, *tok, prompt, 4, sp, drafter, SpecOptions{.draft_max = 3, .adaptive = false}, true);
      REQUIRE(r.generated_ids.size() == 4);
      ++seen[std::vector<int>(r.generated_ids.begin(), r.generated_ids.begin() + 3)];
      drafted += r.spec_drafted, accepted += r.spec_accepted;
    }
    std::vector<int64_t> counts;
    int64_t outside = 0;
    for (auto &[seq, count] : seen) outside += joint.count(seq) ? 0 : count;
    CHECK(outside == 0);
    for (auto &[seq, prob] : joint) counts.push_back(seen.count(seq) ? seen[seq] : 0);
    int df = 0;
    double stat = chi_square(counts, p, runs, &df);
    INFO("chi-square " << stat << " with " << df << " degrees of freedom; " << accepted << " of " << drafted << " drafts accepted");
    CHECK(stat < critical(df));
    // Both outcomes of the rule were exercised (n-gram drafts from this random model's text
    // are its own business).
    if (drafter != &ngram && drafter != &ngram_tree) {
      CHECK(accepted > 0);
      CHECK(accepted < drafted);
    }
  }
}

TEST_CASE("spec: a draft model of another vocabulary, and more drafts than the engine keeps rows for, are clear errors") {
  SynthConfig c = synth_preset("tiny");
  ModelWeights target = load_model_weights(synthetic(c, "spec-err-tiny.gguf"));
  SynthConfig big = c;
  big.hparams.n_vocab = 600;
  ModelWeights draft = load_model_weights(synthetic(big, "spec-err-600.gguf"));
  std::string text = kdsl_test::error_text([&] { ModelDrafter(draft, 512, Device::cpu(), EngineOptions{.context = 32}, SamplerParams{}); });
  CHECK(kdsl_test::contains(text, "the draft model's vocabulary has 600 tokens but the target's has 512"));
  Engine engine(target, Device::cpu(), EngineOptions{.context = 32, .max_logit_rows = 4});
  auto tok = load_tokenizer(GgufFile(test::scratch_path("spec-err-tiny.gguf")));
  NgramDrafter ngram;
  std::vector<int> prompt = {1, 5, 6, 5, 6};
  text = kdsl_test::error_text([&] { run(engine, *tok, prompt, 8, SamplerParams{.temperature = 0}, &ngram, SpecOptions{.draft_max = 4}); });
  CHECK(kdsl_test::contains(text, "--draft-max 4 checks 5 rows per pass, but the engine keeps logits for 4"));
}

TEST_CASE("spec: a self-draft requantizes the target's matrices into memory it owns, or keeps its first layers") {
  SynthConfig c = synth_preset("tiny");
  c.weight_type = GgmlType::F16;
  ModelWeights target = load_model_weights(synthetic(c, "spec-self-f16.gguf"));
  ModelWeights q4 = self_draft_weights(target, SelfDraftOptions{.type = GgmlType::Q4_0});
  CHECK(q4.layers[1].w_up.type == kernels::WeightType::Q4_0);
  CHECK(q4.output.type == kernels::WeightType::Q4_0);
  CHECK(q4.layers[1].w_up.data != target.layers[1].w_up.data);
  CHECK(q4.token_embd.data == target.token_embd.data);  // one row of it is read a token: kept
  CHECK(q4.bytes_per_token() * 3 < target.bytes_per_token());
  // q, k and v, and gate and up, back to back, so that decode makes one product of each group.
  auto follows = [](const Weight &a, const Weight &b) { return static_cast<const uint8_t *>(a.data) + a.bytes() == b.data; };
  for (const LayerWeights &l : q4.layers) {
    CHECK(follows(l.wq, l.wk));
    CHECK(follows(l.wk, l.wv));
    CHECK(follows(l.w_gate, l.w_up));
  }
  // Each requantized row the same as the target's row quantized alone.
  std::vector<float> row(size_t(target.layers[1].wk.cols));
  std::vector<uint8_t> alone(size_t(kernels::weight_bytes(kernels::WeightType::Q4_0, target.layers[1].wk.cols)));
  const int64_t last = target.layers[1].wk.rows - 1;
  dequantize_row(GgmlType::F16, static_cast<const uint8_t *>(target.layers[1].wk.data) + last * kernels::weight_bytes(kernels::WeightType::F16, target.layers[1].wk.cols),
                 row.data(), target.layers[1].wk.cols);
  quantize_row(GgmlType::Q4_0, row.data(), alone.data(), target.layers[1].wk.cols, nullptr);
  CHECK(std::memcmp(static_cast<const uint8_t *>(q4.layers[1].wk.data) + last * int64_t(alone.size()), alone.data(), alone.size()) == 0);
  ModelWeights first = self_draft_weights(target, SelfDraftOptions{.layers = 1});
  CHECK(first.layers.size() == 1);
  CHECK(first.hparams.n_layer == 1);
  CHECK(first.layers[0].wq.data == target.layers[0].wq.data);
  CHECK_THROWS_WITH_AS(self_draft_weights(target, SelfDraftOptions{.layers = 3}), doctest::Contains("--draft-layers 3: expected 1 to the target's 2 layers"),
                       Error);
  CHECK_THROWS_WITH_AS(self_draft_weights(target, SelfDraftOptions{.type = GgmlType::Q4_K}), doctest::Contains("expected one of q4_0"), Error);
  CHECK_THROWS_WITH_AS(self_draft_weights(target, SelfDraftOptions{.layers = 2}), doctest::Contains("it is the target itself"), Error);
}

TEST_CASE("spec: a self-draft (or kdsl-perplexity --requantize) weighs its rounding by an importance matrix") {
  SynthConfig c = synth_preset("tiny");
  ModelWeights target = load_model_weights(synthetic(c, "spec-self-imatrix.gguf"));
  const Weight &wk = target.layers[1].wk;
  ImportanceMatrix m;
  std::vector<float> rows(size_t(wk.cols));
  for (size_t j = 0; j < rows.size(); ++j) rows[j] = j % 7 == 0 ? 10.0f : 0.1f;
  m.add("blk.1.attn_k.weight", rows, int(wk.cols));
  ModelWeights weighted = self_draft_weights(target, SelfDraftOptions{.type = GgmlType::Q4_0, .imatrix = &m});
  ModelWeights plain = self_draft_weights(target, SelfDraftOptions{.type = GgmlType::Q4_0});
  // blk.1.attn_k is each row quantized with the entry's importance; the rest as without one.
  std::vector<float> importance = m.find("blk.1.attn_k.weight")->mean_squares(), x(static_cast<size_t>(wk.cols));
  const int64_t row_bytes = kernels::weight_bytes(kernels::WeightType::Q4_0, wk.cols);
  std::vector<uint8_t> want(static_cast<size_t>(row_bytes));
  for (int64_t r = 0; r < wk.rows; ++r) {
    std::memcpy(x.data(), static_cast<const float *>(wk.data) + r * wk.cols, x.size() * sizeof(float));
    quantize_row(GgmlType::Q4_0, x.data(), want.data(), wk.cols, importance.data());
    REQUIRE(std::memcmp(want.data(), static_cast<const uint8_t *>(weighted.layers[1].wk.data) + r * row_bytes, size_t(row_bytes)) == 0);
  }
  auto same = [](const Weight &a, const Weight &b) {
    return std::memcmp(a.data, b.data, size_t(kernels::weight_bytes(a.type, a.rows * a.cols))) == 0;
  };
  CHECK_FALSE(same(weighted.layers[1].wk, plain.layers[1].wk));
  CHECK(same(weighted.layers[1].wq, plain.layers[1].wq));
  CHECK(same(weighted.layers[0].wk, plain.layers[0].wk));

  ImportanceMatrix other;  // rows of another length: another model's matrix
  other.add("blk.0.ffn_down.weight", std::vector<float>(32, 1.0f), 32);
  CHECK_THROWS_WITH_AS(self_draft_weights(target, SelfDraftOptions{.type = GgmlType::Q4_0, .imatrix = &other}),
                       doctest::Contains("entry 'blk.0.ffn_down.weight' has 32 columns"), Error);
}
