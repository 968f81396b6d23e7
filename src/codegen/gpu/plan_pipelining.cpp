// plan_pipelining.cpp - which loads feeding tensor-core dots are copied ahead with cp.async
#include "codegen/gpu/plan_pipelining.h"

#include <map>
#include <set>

#include "codegen/gpu/gpu_lowering.h"
#include "codegen/gpu/staged_tile.h"

namespace kdsl::codegen::gpu {
namespace {

struct Defs {
  std::vector<const ir::Op *> def;
  std::map<ir::ValueId, int> uses;
};

// Whether `v` can be computed at another iteration of the loop with body `body`: index
// arithmetic down to the induction variable and values defined outside the body.
bool recomputable(const ir::Function &fn, const Defs &d, const std::set<ir::ValueId> &inside, const ir::Region &body, ir::ValueId v) {
  if (v == body.args[0] || !inside.count(v)) return true;
  const ir::Op *op = d.def[size_t(v)];
  if (!op || !is_index_math(*op, fn.type(v))) return false;  // a carried value, a load, float math
  for (ir::ValueId x : op->operands)
    if (!recomputable(fn, d, inside, body, x)) return false;
  return true;
}

bool is_zero_constant(const Defs &d, ir::ValueId v) {
  const ir::Op *op = d.def[size_t(v)];
  return op && op->kind == OpKind::Constant && (op->ints.empty() || op->ints[0] == 0) && op->fval == 0.0;
}

}  // namespace

bool tensor_copy_fits(const ir::Type &tile) {
  const int64_t width = tile.shape[1] * dtype_bytes(tile.elem);
  return tile.shape.rank == 2 && tile.shape[0] <= 256 && width % 32 == 0;
}

void plan_pipelining(const ir::Function &fn, const TargetInfo &target, int num_stages, LayoutPlan &plan) {
  plan.num_stages = 1;
  if (!target.async_copy || num_stages < 2) return;
  plan.num_stages = num_stages;
  Defs d;
  d.def.assign(fn.values.size(), nullptr);
  walk(fn.body, [&](const ir::Op &op) {
    for (ir::ValueId r : op.results) d.def[size_t(r)] = &op;
    for (ir::ValueId x : op.operands) ++d.uses[x];
  });
  walk(fn.body, [&](const ir::Op &loop) {
    if (loop.kind != OpKind::For) return;
    const ir::Region &body = loop.regions[0];
    const std::set<ir::ValueId> inside = ir::defined_in(body);
    for (const ir::Op &dot : body.ops) {
      if (dot.kind != OpKind::Dot || plan.instruction_of(&dot) < 0) continue;
      const MatrixInstruction &mi = target.matrix_instructions[size_t(plan.instruction_of(&dot))];
      for (int operand : {0, 1}) {
        ir::ValueId tile = dot.operands[size_t(operand)];
        // B as trans(x) of a loaded x: x is copied as it is stored, [n][k] (staged_tile.h).
        bool transposed = false;
        if (ir::ValueId x = dot_b_source(fn, d.def, tile); operand == 1 && x != tile && d.uses[tile] == 1) {
          tile = x;
          transposed = true;
        }
        const ir::Op *load = d.def[size_t(tile)];
        const bool tile_load = load && load->kind == OpKind::TileLoad;
        if (!load || (load->kind != OpKind::Load && !tile_load) || d.uses[tile] != 1 || (operand == 0 && dot.operands[1] == tile)) continue;
        if (std::none_of(body.ops.begin(), body.ops.end(), [&](const ir::Op &o) { return &o == load; })) continue;  // top level of this body
        if (operand == 1 && !transposed && !b_as_stored(mi, fn.type(tile).shape[1])) continue;  // staged [n][k] (8-bit B): through registers
        const ir::Type &t = fn.type(tile);
        if (tile_load) {
          // TMA writes the swizzled tile wgmma reads, a box of swizzle-width columns at a time.
          if (!target.tensor_copy || !mi.descriptor_operands || !tensor_copy_fits(t)) continue;
        } else {
          if (plan.width_of(load) * dtype_bytes(t.elem) != 16) continue;
          if (load->operands.size() == 3 && !is_zero_constant(d, load->operands[2])) continue;
        }
        bool ok = true;
        for (size_t i = 0; i < load->operands.size() && ok; ++i) ok = recomputable(fn, d, inside, body, load->operands[i]);
        if (ok) plan.pipelined.push_back({load, &loop, &dot, operand, tile_load});
      }
    }
  });
}

}  // namespace kdsl::codegen::gpu
