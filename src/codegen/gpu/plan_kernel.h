// plan_kernel.h - the GPU's planning steps in order: which tile loads TMA copies, layouts, pipelining
#pragma once
#include "codegen/gpu/layout.h"
#include "codegen/target_info.h"
#include "codegen/tensor_map.h"
#include "ir/ir.h"

namespace kdsl::codegen::gpu {

// For compile() and the SIMT emulator, after the block-IR passes: expands every TileLoad TMA
// will not copy into a masked load and every TileStore TMA will not write into a masked store
// (passes/expand_tile_accesses.h), then assigns layouts and
// plans pipelining. TMA is tried for a TileLoad where the target has it (tensor_copy) and
// num_stages >= 2, and the launcher can encode its tensor map (tensor_map_fields): the base
// an argument proven 16-byte aligned, the extents arguments or constants, the strides (a 3-D
// tensor's plane stride too) arguments proven divisible by 16 or constants whose bytes are
// multiples of 16. One kept
// that the pipeliner does not take after all (its dot left on FMAs, say) is expanded and the
// plan made again. A TileStore is written by TMA (LayoutPlan::tensor_stores) wherever the
// target has it, its map can be encoded as a load's, and its tile is one box: at most 256 rows
// and 256 columns, rows a multiple of 16 bytes. An fp8 dot the plan leaves on FMAs is widened
// to f16 operands (widen_fp8_dots.h) and the plan made again.
LayoutPlan plan_gpu_kernel(ir::Function &fn, const TargetInfo &target, int num_warps, int num_stages);

// The tensor map fields of a TileLoad or TileStore into `spec` (the base's argument index,
// rank, extents and strides), or false where one is neither an argument nor a constant as above.
bool tensor_map_fields(const ir::Function &fn, const ir::Op &tile, TensorMapSpec &spec);

}  // namespace kdsl::codegen::gpu
