// kernel_plan.h - the kernels an engine will launch for a model, batch sizes and context: its own dispatch walked with launches recorded
#pragma once
#include <cstdint>
#include <vector>

#include <kdsl/device.h>

#include "kernels/launch_recorder.h"
#include "kernels/library.h"
#include "models/engine/engine.h"
#include "models/engine/model_weights.h"

namespace kdsl::models {

struct KernelPlanOptions {
  // Prompt tokens per prefill pass (kdsl-run -b, EngineOptions::max_batch): each size is an
  // engine of its own, whose prompts are cut into chunks of up to that many rows.
  std::vector<int> batch_sizes = {512};
  // Positions covered (kdsl-run --ctx); 0: the model's context length (2048 where it has none).
  int context = 0;
  int page_size = EngineOptions{}.page_size;  // the engine's, so that the plan walks what it will launch
  // Speculative decoding, 0: off. The target checks up to draft_max drafted tokens per pass
  // (draft_max + 1 rows of logits); a draft model, where given, runs an engine of its own
  // (its prefill, and its drafting steps at every position).
  int draft_max = 0;
  const ModelWeights *draft_model = nullptr;
  // Token trees (kdsl-run --draft-branches N > 1, any drafter): checks of 2 .. draft_max + 1
  // nodes through Engine::forward_tree, and the kept branch's moves (keep_branch).
  bool draft_trees = false;
  // The KV cache's types (kdsl-run --cache-type-k / -v): they choose the attention kernels.
  kernels::KvTypes kv_types;
  // Whether decode takes the graph's position-independent kernels (kdsl-run --decode-graph;
  // Auto: on a GPU, as the engine decides).
  DecodeGraph decode_graph = DecodeGraph::Auto;
  // The device planned for: the CPU with `threads` workers (0: the `memory` device's), or a
  // GPU with `threads` multiprocessors (required). The decode attention splits a context into
  // programs for every processor, so the count chooses its kernels.
  bool gpu = false;
  int threads = 0;
};

struct KernelPlan {
  // Every (kernel, specialization, options) the engine launches, ordered by text().
  std::vector<kernels::RecordedKernel> kernels;
  int64_t steps = 0;     // forward passes walked
  int64_t launches = 0;  // launches recorded over them
  int context = 0;       // the positions covered
};

// Walks every step kind an Engine takes (kdsl-run with these options) through the Engine and
// kernels::Library code that launches (a recorder records instead, so nothing runs and no
// model arithmetic is done): for each batch size, every prefill chunk (1 .. batch rows at each
// chunk's first position), a decode step at every position, and with speculation every check
// (2 .. draft_max + 1 rows at every position) and the draft model's prefill chunks and
// drafting steps (1 .. draft_max + 1 rows at every position). Any kernel the dispatch chooses
// is in the plan by construction, with the specialization its launch computes from the
// engine's buffers (kdsl::launch_arg_spec). Steps of more than one row are walked at those
// positions only: no kernel of such a step is chosen by its position today (the positions are
// Dynamic<i32> arguments). `memory`: where the walk's buffers live (a CPU device will do for a
// GPU plan). Throws kdsl::Error for options out of range, as the Engine does.
KernelPlan plan_kernels(const ModelWeights &model, const Device &memory, const KernelPlanOptions &options);

struct EngineOptions;  // engine.h
// The engines kdsl-run makes for these options, which the plan walks and the tuner times: the
// target's for prompts cut into `batch` rows over `context` positions, and a draft model's
// engine beside it (ModelDrafter's: one row of logits, an f32 KV cache).
EngineOptions planned_engine_options(const KernelPlanOptions &options, int context, int batch);
EngineOptions planned_draft_options(const EngineOptions &target);

}  // namespace kdsl::models
