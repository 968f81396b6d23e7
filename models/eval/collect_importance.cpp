// collect_importance.cpp - chunks of a text through the engine, each weight product's input rows added to an importance matrix
#include "models/eval/collect_importance.h"

#include <fmt/format.h>
#include <kdsl/error.h>

#include <algorithm>
#include <vector>

#include "models/engine/engine.h"

namespace kdsl::models {
namespace {

// Names each input the engine shows by its weight and adds it to the matrix.
class ImportanceObserver : public MatmulInputObserver {
 public:
  ImportanceObserver(ImportanceMatrix &matrix, bool keep_output) : matrix_(matrix), keep_output_(keep_output) {}
  void observe(TensorName weight, int layer, std::span<const float> rows, int cols) override {
    if (weight == TensorName::Output && !keep_output_) return;
    matrix_.add(tensor_name(weight, layer), rows, cols);
  }

 private:
  ImportanceMatrix &matrix_;
  bool keep_output_;
};

// Clears the engine's observer however the collection ends.
struct ObserverScope {
  Engine &engine;
  ObserverScope(Engine &e, MatmulInputObserver *observer) : engine(e) { engine.observe_inputs(observer); }
  ~ObserverScope() { engine.observe_inputs(nullptr); }
};

}  // namespace

int collect_importance(Engine &engine, std::span<const int> tokens, const ImportanceOptions &o, ImportanceMatrix &matrix,
                       const std::function<void(int, int)> &progress) {
  if (o.context < 1 || o.context > engine.context())
    throw Error(fmt::format("importance matrix: chunks of {} tokens need an engine with that context (it has {})", o.context, engine.context()));
  int available = int(tokens.size() / size_t(o.context));
  if (available == 0)
    throw Error(fmt::format("importance matrix: the text has {} tokens, fewer than one chunk of {} (lower -c or give more text)", tokens.size(),
                            o.context));
  int chunks = o.max_chunks > 0 ? std::min(o.max_chunks, available) : available;
  if (o.keep_output && o.context > engine.max_logit_rows())
    throw Error(fmt::format("importance matrix: keeping the classifier's input needs logits of all {} rows (the engine keeps {})", o.context,
                            engine.max_logit_rows()));
  std::vector<int> input(size_t(o.context));
  ImportanceObserver observer(matrix, o.keep_output);
  ObserverScope scope(engine, &observer);
  matrix.chunk_size = o.context;
  for (int c = 0; c < chunks; ++c) {
    std::span<const int> text = tokens.subspan(size_t(c) * size_t(o.context), size_t(o.context));
    std::copy(text.begin(), text.end(), input.begin());
    if (o.bos >= 0) input[0] = o.bos;
    if (o.keep_output) engine.forward_rows(input, 0);
    else engine.forward(input, 0);
    matrix.chunk_count++;
    if (progress) progress(c + 1, chunks);
  }
  return chunks;
}

}  // namespace kdsl::models
