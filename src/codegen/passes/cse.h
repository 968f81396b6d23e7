// cse.h - common subexpression elimination over pure ops, respecting region scopes
#pragma once
#include "ir/ir.h"

namespace kdsl::passes {

// Replaces a pure op that repeats an earlier one (same kind, operands, attributes and type)
// visible in an enclosing scope by that op's result. Loads, stores and atomics are never
// merged; the duplicates become dead and are left for dce.
void cse(ir::Function &fn);

}  // namespace kdsl::passes
