// pointer_roots.h - which kernel arguments each pointer value derives from (its provenance), for checked mode
#pragma once
#include <vector>

#include "ir/ir.h"

namespace kdsl::codegen {

// For every value of pointer type, the indices into fn.args of the pointer arguments it may be
// derived from, sorted: through ptr_add, views and select, and through the values for and if
// regions carry (a fixed point over loops). Any op with a pointer result derives it from its
// pointer operands, so ops added later are covered without a case here. Other values: empty.
std::vector<std::vector<int>> pointer_roots(const ir::Function &fn);

}  // namespace kdsl::codegen
