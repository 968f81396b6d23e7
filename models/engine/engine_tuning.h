// engine_tuning.h - the engine's tuned kernels timed ahead of time (kdsl-prewarm --tune): one forward pass per key bucket the plan's walk meets
#pragma once
#include <kdsl/autotune.h>
#include <kdsl/device.h>

#include "models/engine/kernel_plan.h"

namespace kdsl::models {

struct EngineTuning {
  int64_t passes = 0;  // forward passes run
  TuneStats stats;     // what kdsl::autotune did during them (this call's share); a choice read from its record by the
                       // plan before is `remembered` here
};

// Runs engines on `device` (the target model, and the draft model where the options name one)
// for real, one forward pass per row count whose sizes fall in a key bucket of their own:
// 1, 2, 4, ... up to each batch size and the batch size itself, and with speculation 2 ..
// draft_max + 1 rows of logits (forward_rows) in powers of two. The Library's tuned dispatch
// points (kernels/library_tuning.h) meet every key bucket the engine with these options meets
// in generation (they key on power-of-two buckets of rows, N and K), so each is timed now, or
// found recorded, and recorded for later processes. Token ids are any valid ones: they choose
// no kernel. `options` as plan_kernels takes them, and checks them: plan first.
EngineTuning tune_engine(const ModelWeights &model, const Device &device, const KernelPlanOptions &options);

}  // namespace kdsl::models
