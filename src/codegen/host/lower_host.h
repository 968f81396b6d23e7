// lower_host.h - block IR to LLVM IR for the host CPU: each block op becomes a loop nest
#pragma once
#include <string>

#include <llvm/IR/Module.h>

#include "codegen/codegen.h"
#include "ir/ir.h"

namespace kdsl::codegen {

// Adds to `module` a function `symbol` with the HostEntry signature (codegen.h) that runs
// program instances [begin, end) of `fn`.
//
// Each block value is either materialized into a stack array (one loop nest writes it) or
// fused: recomputed inside its consumer's loop. Index arithmetic (integer, boolean and
// pointer ops, views, ranges, constants) is always fused, so the vectorizer sees affine
// addresses; other elementwise values and loads are fused into their single elementwise
// consumer in the same region; everything else (reductions, dot operands and results, loop
// carried values, multiply used values) is materialized.
//
// With bounds_checks, every load, store and atomic is checked against the extent of the
// arguments its pointer derives from (bounds_checks.h; the slot layout is in codegen.h).
// dot4 takes the path `int_dot` says (int_dot.h; Auto: the fastest this CPU has).
void lower_to_llvm(const ir::Function &fn, llvm::Module &module, const std::string &symbol, bool bounds_checks = false,
                   IntDotPath int_dot = IntDotPath::Auto);

}  // namespace kdsl::codegen
