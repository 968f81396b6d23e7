// self_draft.h - self-speculation: the target's own weights as its draft model, requantized at load time and/or cut to its first layers
#pragma once
#include <optional>

#include "models/engine/model_weights.h"

namespace kdsl::models {

struct SelfDraftOptions {
  std::optional<GgmlType> type = std::nullopt;  // requantize every matrix (classifier included) to this: Q8_0 or Q4_0
  int layers = 0;                // > 0: only the first `layers` layers run (the rest are skipped)
};

// A ModelWeights for ModelDrafter made from the target's, with no second file: the matrices
// requantized to options.type (rows whose length is not a multiple of 32 keep their type; the
// token table keeps its type, since only one row of it is read a token), and/or the layers past
// options.layers dropped (the final norm and classifier kept: LayerSkip's early exit). The
// requantized matrices are owned by the result; everything else is the target's memory, so the
// result must not outlive `target`. Throws kdsl::Error for a type other than Q8_0 and Q4_0, a
// layer count outside 1..n_layer, or options that change nothing.
ModelWeights self_draft_weights(const ModelWeights &target, const SelfDraftOptions &options);

}  // namespace kdsl::models
