// fold_constants.h - evaluates ops on constants and removes algebraic identities
#pragma once
#include "ir/ir.h"

namespace kdsl::passes {

// Replaces elementwise ops whose operands are all (splat) constants by the constant result,
// computed with the wrap-around and rounding of the result's dtype; reshapes constants in
// place of broadcast / expand_dims / reshape / trans of a constant; simplifies x + 0, x - 0,
// x * 1, x / 1, x & true, x | false and selects on a constant condition; rounds float
// constants to their dtype (0.1 : f16 becomes the nearest f16). Leaves the
// replaced ops dead for dce.
void fold_constants(ir::Function &fn);

}  // namespace kdsl::passes
