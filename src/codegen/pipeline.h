// pipeline.h - the block-IR pass pipeline every backend runs before lowering
#pragma once
#include <string>

#include "ir/ir.h"

namespace kdsl::codegen {

// Runs the passes listed in pipeline.cpp, in order, verifying after each. With
// KDSL_TIME_PASSES set, prints each pass's time to stderr.
void run_pipeline(ir::Function &fn);

}  // namespace kdsl::codegen
