// pipeline.h - the block-IR passes every target runs (compile(), codegen.h, runs them and the target's own steps)
#pragma once
#include <string>

#include "ir/ir.h"

namespace kdsl::codegen {

// Runs the block-IR passes listed in pipeline.cpp, in order, verifying after each. With
// KDSL_TIME_PASSES set, prints each pass's time to stderr.
void run_pipeline(ir::Function &fn);

}  // namespace kdsl::codegen
