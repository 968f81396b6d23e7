// dce.cpp - dead code elimination to a fixed point
#include "codegen/passes/dce.h"

#include <algorithm>

#include "codegen/passes/rewrite.h"

namespace kdsl::passes {
namespace {
using namespace ir;  // op traits: is_view, is_elementwise, has_effect, has_regions

bool removable(const ir::Op &op) {
  if (op.kind == OpKind::Load || op.kind == OpKind::TileLoad) return true;
  return !has_effect(op.kind) && !has_regions(op.kind) && !op.results.empty();
}

bool sweep(ir::Region &r, const std::vector<int> &uses) {
  bool changed = false;
  for (ir::Op &op : r.ops)
    for (ir::Region &inner : op.regions) changed |= sweep(inner, uses);
  auto dead = [&](const ir::Op &op) {
    return removable(op) && std::all_of(op.results.begin(), op.results.end(), [&](ir::ValueId v) { return uses[size_t(v)] == 0; });
  };
  auto end = std::remove_if(r.ops.begin(), r.ops.end(), dead);
  changed |= end != r.ops.end();
  r.ops.erase(end, r.ops.end());
  return changed;
}

}  // namespace

void dce(ir::Function &fn) {
  while (sweep(fn.body, count_uses(fn))) {
  }
}

}  // namespace kdsl::passes
