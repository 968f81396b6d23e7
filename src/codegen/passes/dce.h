// dce.h - removes ops whose results are never used and that have no effect
#pragma once
#include "ir/ir.h"

namespace kdsl::passes {

// Removes pure ops (and loads) whose results are unused, repeating until nothing changes.
// Stores, atomics, loops and conditionals stay.
void dce(ir::Function &fn);

}  // namespace kdsl::passes
