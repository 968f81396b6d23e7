// collect_importance.h - llama-imatrix's collection on kdsl's engine: a calibration text's activations summed per weight column
#pragma once
#include <functional>
#include <span>

#include "models/gguf/importance_matrix.h"

namespace kdsl::models {

class Engine;

// llama-imatrix's collection: the text's tokens cut into chunks of `context` tokens (what does
// not fill a chunk is dropped), each run from an empty cache with its first token replaced by
// BOS (when the model adds one), every activation row of every chunk counted.
struct ImportanceOptions {
  int context = 512;
  int max_chunks = 0;  // 0: every whole chunk of the text
  int bos = -1;        // BOS id put at the start of each chunk; -1: none
  // Whether the classifier's input is kept (llama-imatrix's --process-output); it is not by
  // default, as llama.cpp's tools neither collect nor use it. Every row's logits are then
  // computed, so the engine's max_logit_rows must hold a chunk.
  bool keep_output = false;
};

// Runs the chunks of `tokens` on `engine` (whose context holds options.context tokens), adding
// every weight product's input rows to `matrix` (Engine::observe_inputs);
// sets its chunk_count and chunk_size. `progress(chunk, chunks)` after each chunk. Returns the
// number of chunks run.
int collect_importance(Engine &engine, std::span<const int> tokens, const ImportanceOptions &options, ImportanceMatrix &matrix,
                       const std::function<void(int, int)> &progress = {});

}  // namespace kdsl::models
