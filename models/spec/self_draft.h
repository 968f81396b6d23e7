// self_draft.h - self-speculation: the target's own weights as its draft model, requantized at load time and/or cut to its first layers
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "models/engine/model_weights.h"
#include "models/gguf/importance_matrix.h"

namespace kdsl::models {

struct SelfDraftOptions {
  std::optional<GgmlType> type = std::nullopt;  // requantize every matrix (classifier included) to this: is_self_draft_type
  int layers = 0;                // > 0: only the first `layers` layers run (the rest are skipped)
  // With `type`: each matrix's rounding error weighed by its entry's column importances, by
  // the matrix's GGUF name (quantize_row); matrices without one are quantized without.
  const ImportanceMatrix *imatrix = nullptr;
};

// A ModelWeights for ModelDrafter made from the target's, with no second file: the matrices
// requantized to options.type (rows whose length is not a multiple of 32 keep their type; the
// token table keeps its type, since only one row of it is read a token), and/or the layers past
// options.layers dropped (the final norm and classifier kept: LayerSkip's early exit). The
// requantized matrices are owned by the result; everything else is the target's memory, so the
// result must not outlive `target`. Throws kdsl::Error for a type is_self_draft_type refuses, a
// layer count outside 1..n_layer, an importance entry whose column count is not its matrix's, or
// options that change nothing.
ModelWeights self_draft_weights(const ModelWeights &target, const SelfDraftOptions &options);

// The types a self-draft may requantize to: those the kernels run in 32-element blocks (Q8_0,
// Q4_0, ...: rows of any multiple of 32 take them), and their spellings for a message.
bool is_self_draft_type(GgmlType t);
std::string self_draft_type_names();
// The type `text` names, for an `option` (as "--draft-type") that takes a self-draft type;
// throws kdsl::Error naming the option, the text and the types it takes.
GgmlType parse_self_draft_type(std::string_view option, std::string_view text);

}  // namespace kdsl::models
