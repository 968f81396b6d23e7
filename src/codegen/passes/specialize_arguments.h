// specialize_arguments.h - applies what the launch proved about arguments (Triton's specialization)
#pragma once
#include "ir/ir.h"

namespace kdsl::passes {

// Integer arguments classed EqualToOne are replaced by the constant 1 in the body, so that
// strides of 1 fold into contiguous (vectorizable) accesses. Divisible16 classes stay on the
// arguments for the lowering (alignment and divisibility assumptions).
void specialize_arguments(ir::Function &fn);

}  // namespace kdsl::passes
