// plan_kernel.cpp - tile loads kept for TMA or expanded, then layouts and pipelining
#include "codegen/gpu/plan_kernel.h"

#include <algorithm>
#include <set>

#include "codegen/gpu/assign_layouts.h"
#include "codegen/gpu/plan_pipelining.h"
#include "codegen/gpu/widen_fp8_dots.h"
#include "codegen/passes/expand_tile_accesses.h"

namespace kdsl::codegen::gpu {
namespace {

const ir::Argument *argument_of(const ir::Function &fn, ir::ValueId v) {
  for (const ir::Argument &a : fn.args)
    if (a.value == v) return &a;
  return nullptr;
}

const ir::Op *definition(const ir::Function &fn, ir::ValueId v) {
  const ir::Op *found = nullptr;
  ir::walk(fn.body, [&](const ir::Op &op) {
    if (!found && std::find(op.results.begin(), op.results.end(), v) != op.results.end()) found = &op;
  });
  return found;
}

// An i32 scalar argument (its index) or constant (its value); `divisible`: the value must be a
// multiple of that (specialization proves 16 for arguments).
bool field(const ir::Function &fn, ir::ValueId v, int64_t divisible, TensorMapField &out) {
  if (const ir::Argument *a = argument_of(fn, v)) {
    if (divisible > 1 && (a->spec != ir::ArgClass::Divisible16 || 16 % divisible != 0)) return false;
    out.param = int(a - fn.args.data());
    return true;
  }
  const ir::Op *def = definition(fn, v);
  if (!def || def->kind != OpKind::Constant || def->ints.size() != 1) return false;
  out.value = def->ints[0];
  return out.value % divisible == 0;
}

// The tile a TileLoad reads or a TileStore writes.
const ir::Type &tile_type(const ir::Function &fn, const ir::Op &tile) {
  return fn.type(tile.kind == OpKind::TileStore ? tile.operands[6] : tile.results[0]);
}

// A tile one TMA store writes: one box, at most 256 x 256 with rows of whole 16-byte units.
bool tensor_store_fits(const ir::Type &tile) {
  const int64_t row_bytes = tile.shape[1] * dtype_bytes(tile.elem);
  return tile.shape.rank == 2 && tile.shape[0] <= 256 && tile.shape[1] <= 256 && row_bytes % 16 == 0;
}

}  // namespace

bool tensor_map_fields(const ir::Function &fn, const ir::Op &tile, TensorMapSpec &spec) {
  const ir::Argument *b = argument_of(fn, tile.operands[0]);
  if (!b || b->spec != ir::ArgClass::Divisible16) return false;
  spec.base = int(b - fn.args.data());
  const int eb = dtype_bytes(tile_type(fn, tile).elem);
  // The strides' bytes multiples of 16: multiples of 16 / eb elements (an argument divisible
  // by 16 is, for every element size up to 16 bytes).
  if (!field(fn, tile.operands[1], 1, spec.rows) || !field(fn, tile.operands[2], 1, spec.cols) || !field(fn, tile.operands[3], 16 / eb, spec.row_stride))
    return false;
  const int p = ir::tile_plane_operand(tile);
  spec.rank = p >= 0 ? 3 : 2;
  return p < 0 || (field(fn, tile.operands[size_t(p)], 1, spec.planes) && field(fn, tile.operands[size_t(p) + 1], 16 / eb, spec.plane_stride));
}

LayoutPlan plan_gpu_kernel(ir::Function &fn, const TargetInfo &target, int num_warps, int num_stages) {
  // Decided before expanding: the expansion moves ops while it runs.
  std::set<const ir::Op *> candidates;
  if (target.tensor_copy)
    ir::walk(fn.body, [&](const ir::Op &op) {
      TensorMapSpec spec;
      const bool load = op.kind == OpKind::TileLoad && num_stages >= 2 && tensor_copy_fits(fn.type(op.results[0]));
      const bool store = op.kind == OpKind::TileStore && tensor_store_fits(tile_type(fn, op));
      if ((load || store) && tensor_map_fields(fn, op, spec)) candidates.insert(&op);
    });
  passes::expand_tile_accesses(fn, [&](const ir::Op &tile) { return candidates.count(&tile) > 0; });
  for (;;) {  // each round expands at least one tile load, so it ends
    LayoutPlan plan = assign_layouts(fn, target, num_warps);
    if (widen_fp8_dots_left_on_fmas(fn, target, plan)) continue;  // planned again with their f16 operands
    plan_pipelining(fn, target, num_stages, plan);
    bool all_taken = true;
    ir::walk(fn.body, [&](const ir::Op &op) { all_taken &= op.kind != OpKind::TileLoad || plan.pipelined_load(&op) != nullptr; });
    if (all_taken) {
      ir::walk(fn.body, [&](const ir::Op &op) {
        if (op.kind == OpKind::TileStore) plan.tensor_stores.push_back(&op);  // every one left is a candidate
      });
      return plan;
    }
    // The plan points into fn's ops, which expansion moves: it is made again from scratch.
    // The tile stores kept stay: they do not depend on the plan.
    passes::expand_tile_accesses(fn, [&](const ir::Op &tile) { return tile.kind == OpKind::TileStore || plan.pipelined_load(&tile) != nullptr; });
  }
}

}  // namespace kdsl::codegen::gpu
