// engine_tuning.cpp - forward passes at one row count per key bucket, so that every tuned kernel the engine launches is timed or found recorded
#include "models/engine/engine_tuning.h"

#include <algorithm>
#include <set>
#include <vector>

#include "models/engine/engine.h"

namespace kdsl::models {
namespace {

// 1, 2, 4, ... below `most`, and `most` itself (the buckets past the powers of two hold it).
std::set<int> bucket_rows(int most) {
  std::set<int> rows;
  for (int r = 1; r < most; r *= 2) rows.insert(r);
  rows.insert(std::max(1, most));
  return rows;
}

void run_passes(const ModelWeights &model, const Device &device, EngineOptions eo, int batch, int draft_max, int64_t &passes) {
  Engine engine(model, device, eo);
  const int most = std::min(batch, engine.context() - 1);
  std::vector<int> tokens(size_t(std::max(most, draft_max + 1)), 0);
  for (int rows : bucket_rows(most)) {
    engine.forward(std::span<const int>(tokens.data(), size_t(rows)), 0);
    ++passes;
  }
  if (draft_max > 0)
    for (int rows : bucket_rows(std::min(draft_max + 1, engine.max_logit_rows())))
      if (rows > 1) {
        engine.forward_rows(std::span<const int>(tokens.data(), size_t(rows)), 0);
        ++passes;
      }
}

TuneStats since(const TuneStats &before) {
  TuneStats now = tune_stats();
  return {now.timed - before.timed, now.recorded - before.recorded, now.remembered - before.remembered, now.rejected - before.rejected,
          now.defaults - before.defaults};
}

}  // namespace

EngineTuning tune_engine(const ModelWeights &model, const Device &device, const KernelPlanOptions &options) {
  EngineTuning result;
  const TuneStats before = tune_stats();
  for (int batch : options.batch_sizes) {
    EngineOptions eo = planned_engine_options(options, options.context, batch);
    run_passes(model, device, eo, batch, options.draft_max, result.passes);
    if (options.draft_model) {
      EngineOptions de = planned_draft_options(eo);
      de.max_batch = std::max(batch, options.draft_max + 1);  // its drafting steps run up to draft_max + 1 rows
      run_passes(*options.draft_model, device, de, de.max_batch, 0, result.passes);
    }
  }
  result.stats = since(before);
  return result;
}

}  // namespace kdsl::models
