// kernel_plan.cpp - the shape walk: every step kind of the engine run once with launches recorded instead of run
#include "models/engine/kernel_plan.h"

#include <fmt/format.h>

#include <algorithm>

#include <kdsl/error.h>

#include "models/engine/engine.h"

namespace kdsl::models {
namespace {

constexpr int kDefaultContext = 2048;  // as the Engine takes a model that states none
constexpr int kMaxContext = 1 << 24;

// The steps one engine takes, each run through Engine::forward / forward_rows as generation
// runs them. Token ids are any valid ones: they choose no kernel.
class Walk {
 public:
  Walk(Engine &engine, int64_t &steps) : engine_(engine), steps_(steps), tokens_(size_t(engine.context()), 0) {}

  // A prompt's prefill cut into chunks of `batch` rows: a chunk of every length 1 .. batch at
  // every chunk's first position (the last chunk computes logits for its last row; the others
  // launch the same kernels but the classifier's).
  void prefill(int batch) {
    const int last = engine_.context() - 1;  // a prompt leaves room for one generated token
    for (int start = 0; start < last; start += batch)
      for (int n = 1; n <= std::min(batch, last - start); ++n) forward(n, start);
  }
  // One token at every position after a prompt (the decode attention's splits follow it).
  void decode() {
    for (int pos = 1; pos < engine_.context(); ++pos) forward(1, pos);
  }
  // Speculative checks: the last token and k = 1 .. draft_max drafts, logits for every row,
  // at every position where the drafts fit the context.
  void checks(int draft_max) {
    for (int k = 1; k <= draft_max; ++k)
      for (int pos = 1; pos + k < engine_.context(); ++pos) {
        engine_.forward_rows(std::span<const int>(tokens_.data(), size_t(k + 1)), pos);
        ++steps_;
      }
  }
  // Token trees of 2 .. draft_max + 1 nodes (as many as a chunk holds), then each number of
  // branch moves: the root's first child a decoy, the rest a chain from the root, so keeping
  // the first m chain nodes moves m rows. Positions are Dynamic in the tree kernels: one
  // position serves.
  void trees(int draft_max) {
    const int most = std::min({draft_max + 1, Engine::kMaxTreeNodes, engine_.max_batch(), engine_.context() - 1});
    for (int n = 2; n <= most; ++n) {
      std::vector<int> parents(static_cast<size_t>(n));
      for (int i = 0; i < n; ++i) parents[size_t(i)] = i <= 1 ? i - 1 : (i == 2 ? 0 : i - 1);
      engine_.forward_tree(std::span<const int>(tokens_.data(), size_t(n)), parents, 1);
      ++steps_;
      std::vector<int> branch = {0};
      for (int m = 1; m + 1 < n; ++m) {
        branch.push_back(m + 1);
        engine_.keep_branch(branch, 1);
      }
    }
  }
  // A draft model catching up with the text (1 .. draft_max + 1 rows) at every position.
  void drafting(int draft_max) {
    for (int n = 1; n <= draft_max + 1; ++n)
      for (int pos = 0; pos + n <= engine_.context(); ++pos) forward(n, pos);
  }

 private:
  void forward(int n, int pos) {
    engine_.forward(std::span<const int>(tokens_.data(), size_t(n)), pos);
    ++steps_;
  }

  Engine &engine_;
  int64_t &steps_;
  std::vector<int> tokens_;
};

void check(const KernelPlanOptions &o) {
  if (o.batch_sizes.empty()) throw Error("kernel plan: no batch size given (--batch)");
  for (int b : o.batch_sizes)
    if (b < 1 || b > (1 << 16)) throw Error(fmt::format("kernel plan: batch size {}: expected 1 to 65536 (--batch)", b));
  if (o.context < 0 || o.context > kMaxContext) throw Error(fmt::format("kernel plan: context of {} tokens: expected 1 to {} (--ctx)", o.context, kMaxContext));
  if (o.draft_max < 0 || o.draft_max > 64) throw Error(fmt::format("kernel plan: --draft-max {}: expected 0 to 64", o.draft_max));
  if (o.draft_model && o.draft_max == 0) throw Error("kernel plan: a draft model drafts up to --draft-max tokens, which is 0");
  if (o.gpu && o.threads < 1) throw Error(fmt::format("kernel plan for a GPU: {} multiprocessors; expected at least 1", o.threads));
  if (o.threads < 0) throw Error(fmt::format("kernel plan: {} CPU threads; expected 0 (every CPU) or more", o.threads));
}

}  // namespace

EngineOptions planned_engine_options(const KernelPlanOptions &options, int context, int batch) {
  EngineOptions eo;
  eo.context = context;
  eo.page_size = options.page_size;
  eo.max_batch = batch;
  eo.max_logit_rows = options.draft_max > 0 ? options.draft_max + 1 : 1;
  eo.kv_types = options.kv_types;
  eo.decode_graph = options.decode_graph;
  return eo;
}

EngineOptions planned_draft_options(const EngineOptions &target) {
  EngineOptions de = target;
  de.max_logit_rows = 1;
  de.kv_types = {};
  return de;
}

KernelPlan plan_kernels(const ModelWeights &model, const Device &memory, const KernelPlanOptions &options) {
  check(options);
  KernelPlan plan;
  int64_t model_context = model.hparams.context_length > 0 ? model.hparams.context_length : kDefaultContext;
  plan.context = options.context > 0 ? options.context : int(std::min<int64_t>(model_context, kMaxContext));
  if (plan.context < 2) throw Error(fmt::format("kernel plan: a context of {} tokens holds no prompt and generated token; expected at least 2", plan.context));

  kernels::LaunchRecorder recorder(kernels::LaunchRecorder::Mode::InsteadOfLaunching,
                                   {.gpu = options.gpu, .threads = options.threads > 0 ? options.threads : memory.threads()});
  for (int batch : options.batch_sizes) {
    // The engines kdsl-run makes for these options (kdsl_run.cpp: run, make_drafter).
    EngineOptions eo = planned_engine_options(options, plan.context, batch);
    eo.recorder = &recorder;
    Engine target(model, memory, eo);
    Walk walk(target, plan.steps);
    walk.prefill(batch);
    walk.decode();
    if (options.draft_max > 0) walk.checks(options.draft_max);
    if (options.draft_max > 0 && options.draft_trees) walk.trees(options.draft_max);
    if (options.draft_model) {
      Engine draft(*options.draft_model, memory, planned_draft_options(eo));
      Walk draft_walk(draft, plan.steps);
      draft_walk.prefill(batch);
      draft_walk.drafting(options.draft_max);
    }
  }
  plan.kernels = recorder.kernels();
  plan.launches = recorder.recorded_launches();
  return plan;
}

}  // namespace kdsl::models
