// scaled_dot.h - the host's rewrite of acc + dot(a, b) * column scale on bytes into one scaled_dot, so the scale meets the products where they widen
#pragma once
#include "ir/ir.h"

namespace kdsl::codegen {

// Rewrites each acc + dot(a, b, 0) * broadcast(s), s an i32 row [1, N] and a, b bytes, into
// scaled_dot(a, b, acc, s) (ops.def), where the dot and the product have no other use, and a
// product alone into scaled_dot(a, b, 0, s).
// A k-quant's sub-block (kernels/kquant_int_dot.h) is one such byte dot with its own scale
// per weight row: fused, the host's byte-dot tiles widen their i16 pair sums by the scales
// instead of by ones (vpmaddwd either way) and add into one accumulator that stays in place
// across the sub-blocks, where the unfused form stored each sub-block's [M, N] sums and
// multiplied them by their scales in a pass of their own. Exact as the unfused form is:
// i32 products and sums wrap the same way. Host only: the GPU lowerings see the dot.
void fuse_scaled_dots(ir::Function &fn);

}  // namespace kdsl::codegen
