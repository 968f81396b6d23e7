// rewrite.h - small helpers shared by the IR passes: use counts and value replacement
#pragma once
#include <unordered_map>
#include <vector>

#include "ir/ir.h"

namespace kdsl::passes {

// Number of uses of every value (indexed by ValueId), over all regions.
std::vector<int> count_uses(const ir::Function &fn);

// `v` after following its chain of replacements (v itself when it has none).
ir::ValueId resolve(const std::unordered_map<ir::ValueId, ir::ValueId> &replacement, ir::ValueId v);

// Rewrites every operand found in `replacement` (following chains) to its replacement.
void replace_uses(ir::Function &fn, const std::unordered_map<ir::ValueId, ir::ValueId> &replacement);

}  // namespace kdsl::passes
