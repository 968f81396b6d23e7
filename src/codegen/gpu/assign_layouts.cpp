// assign_layouts.cpp - blocked layouts from num_warps and shapes, mma layouts for dots on tensor cores; vector widths from axis info
#include "codegen/gpu/assign_layouts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include <kdsl/error.h>

#include "codegen/gpu/axis_info.h"
#include "codegen/gpu/gpu_lowering.h"

namespace kdsl::codegen::gpu {
namespace {

// The ops reading each value.
using Users = std::map<ir::ValueId, std::vector<const ir::Op *>>;

int pow2_floor(int64_t v) {
  int p = 1;
  while (int64_t(p) * 2 <= v) p *= 2;
  return p;
}
int pow2_ceil(int64_t v) {
  int p = 1;
  while (p < v) p *= 2;
  return p;
}

Layout blocked_for(const ir::Shape &s, int vec, int warp_size, int num_warps) {
  Layout l;
  l.rank = s.rank;
  int last = s.rank - 1;
  for (int d = 0; d < s.rank; ++d) {
    l.size_per_thread[size_t(d)] = 1;
    l.order[size_t(d)] = last - d;
  }
  l.size_per_thread[size_t(last)] = std::min(vec, pow2_floor(s[last]));
  int threads = warp_size;
  for (int d = last; d >= 0; --d) {
    int room = pow2_ceil((s[d] + l.size_per_thread[size_t(d)] - 1) / l.size_per_thread[size_t(d)]);
    l.threads_per_warp[size_t(d)] = std::min(threads, room);
    threads /= l.threads_per_warp[size_t(d)];
  }
  l.threads_per_warp[0] *= threads;  // a block smaller than a warp: lanes hold duplicates
  int warps = num_warps;
  for (int d = last; d >= 0; --d) {
    int covered = l.size_per_thread[size_t(d)] * l.threads_per_warp[size_t(d)];
    int room = pow2_ceil((s[d] + covered - 1) / covered);
    l.warps_per_cta[size_t(d)] = std::min(warps, room);
    warps /= l.warps_per_cta[size_t(d)];
  }
  l.warps_per_cta[0] *= warps;
  for (int d = 0; d < s.rank; ++d) l.warp_tile[size_t(d)] = l.lane_tile(d);
  return l;
}

// How num_warps warps tile an m x n accumulator in whole instruction tiles: halving the
// longer side of each warp's share first (square warp tiles load the fewest operand
// fragments per mma). {0, 0}: too few tiles for every warp to own some.
// An instruction of several warps (wgmma's warpgroup) stacks all warps along m, so warps
// 4g .. 4g + 3 hold one instruction's rows in order; each warpgroup then owns whole
// instruction rows and every column.
// With `rows_in_warp` (rows_in_warp below), every warp takes whole rows when the m tiles
// divide among them, as a warpgroup instruction's do.
std::array<int, 2> mma_warps(int64_t m, int64_t n, const MatrixInstruction &mi, int num_warps, bool rows_in_warp) {
  int64_t tiles_m = m / (mi.m / mi.warps_per_instruction), tiles_n = n / mi.n;
  if (mi.warps_per_instruction > 1) {
    bool fits = num_warps % mi.warps_per_instruction == 0 && m % (int64_t(mi.m) * (num_warps / mi.warps_per_instruction)) == 0;
    return fits ? std::array<int, 2>{num_warps, 1} : std::array<int, 2>{0, 0};
  }
  if (rows_in_warp && tiles_m % num_warps == 0) return {num_warps, 1};
  int wm = 1, wn = 1;
  while (wm * wn < num_warps) {
    bool can_m = tiles_m % (2 * wm) == 0, can_n = tiles_n % (2 * wn) == 0;
    if (can_m && (!can_n || m / wm >= n / wn)) wm *= 2;
    else if (can_n) wn *= 2;
    else return {0, 0};
  }
  return {wm, wn};
}

// The warning for a dot left on FMAs although `target` has a matrix instruction of its types.
std::string fma_fallback(const ir::Function &fn, const ir::Op &dot, const TargetInfo &target, const std::string &why) {
  const ir::Type &at = fn.type(dot.operands[0]), &bt = fn.type(dot.operands[1]);
  return fmt::format("kernel '{}': dot of {} by {} runs on FMAs on {}, not on its matrix instructions: {}", fn.name, at.str(), bt.str(), target.name, why);
}

// Values that must be held in one layout: a loop's carried value (init, body argument,
// yield, result), an if's results and their yields, and dot's accumulator and result.
class LayoutClasses {
 public:
  explicit LayoutClasses(const ir::Function &fn) : parent_(fn.values.size()) {
    for (size_t v = 0; v < parent_.size(); ++v) parent_[v] = ir::ValueId(v);
    walk(fn.body, [&](const ir::Op &op) {
      if (op.kind == OpKind::For) {
        const ir::Region &body = op.regions[0];
        const ir::Op &yield = body.ops.back();
        for (size_t i = 0; i < op.results.size(); ++i) {
          join(op.operands[i + 3], body.args[i + 1]);
          join(op.results[i], body.args[i + 1]);
          join(yield.operands[i], body.args[i + 1]);
        }
      } else if (op.kind == OpKind::If) {
        for (const ir::Region &r : op.regions)
          for (size_t i = 0; i < op.results.size(); ++i) join(r.ops.back().operands[i], op.results[i]);
      } else if (op.kind == OpKind::Dot) {
        join(op.operands[2], op.results[0]);
      }
    });
  }
  ir::ValueId find(ir::ValueId v) {
    while (parent_[size_t(v)] != v) v = parent_[size_t(v)] = parent_[size_t(parent_[size_t(v)])];
    return v;
  }
  bool alone(ir::ValueId v) {
    for (size_t u = 0; u < parent_.size(); ++u)
      if (ir::ValueId(u) != v && find(ir::ValueId(u)) == find(v)) return false;
    return true;
  }

 private:
  void join(ir::ValueId a, ir::ValueId b) { parent_[size_t(find(a))] = find(b); }
  std::vector<ir::ValueId> parent_;
};

// Whether a dot's accumulator should keep each row inside one warp: its value (any value held
// in its layout class, through elementwise ops of the same shape) is reduced along its rows,
// is another dot's A operand, or meets a row vector broadcast along the columns (attention's
// scores: their row maximum and sum, P into the second product; its accumulator rescaled by
// a factor per row). Split across warps along n, each of these would go through shared
// memory with barriers; rows in a warp take shuffles within the warp, or nothing.
bool rows_in_warp(const ir::Function &fn, const ir::Op &dot, LayoutClasses &classes, const Users &users, const std::vector<const ir::Op *> &def) {
  const ir::Shape &shape = fn.type(dot.results[0]).shape;
  auto row_broadcast = [&](ir::ValueId x) {
    const ir::Op *d = def[size_t(x)];
    if (d && d->kind == OpKind::Broadcast) d = def[size_t(d->operands[0])];
    return d && d->kind == OpKind::ExpandDims && !d->ints.empty() && d->ints[0] == 1;
  };
  std::vector<ir::ValueId> todo;
  for (size_t v = 0; v < fn.values.size(); ++v)
    if (classes.find(ir::ValueId(v)) == classes.find(dot.results[0])) todo.push_back(ir::ValueId(v));
  std::set<ir::ValueId> seen(todo.begin(), todo.end());
  for (ir::ValueId v : todo)
    if (const ir::Op *d = def[size_t(v)]; d && ir::is_elementwise(d->kind) && std::any_of(d->operands.begin(), d->operands.end(), row_broadcast))
      return true;
  while (!todo.empty()) {
    ir::ValueId v = todo.back();
    todo.pop_back();
    auto it = users.find(v);
    if (it == users.end()) continue;
    for (const ir::Op *u : it->second) {
      if (ir::is_reduction(u->kind) && !u->ints.empty() && u->ints[0] == 1) return true;
      if (u->kind == OpKind::Dot && u->operands[0] == v) return true;
      if (!ir::is_elementwise(u->kind) || u->results.empty() || !(fn.type(u->results[0]).shape == shape)) continue;
      if (std::any_of(u->operands.begin(), u->operands.end(), row_broadcast)) return true;
      if (seen.insert(u->results[0]).second) todo.push_back(u->results[0]);
    }
  }
  return false;
}

// Dots on a matrix instruction of the target, with the accumulator layout each needs: the
// operand and accumulator types match an instruction and the shapes are whole instruction
// tiles, enough of them for every warp. Others (f32, ragged shapes, targets without matrix
// instructions) multiply with FMAs in whatever layout their result has.
void choose_mma_layouts(const ir::Function &fn, const TargetInfo &target, int num_warps, LayoutPlan &plan, LayoutClasses &classes,
                        const std::vector<const ir::Op *> &def, const Users &users) {
  std::vector<std::pair<const ir::Op *, Layout>> chosen;
  walk(fn.body, [&](const ir::Op &op) {
    if (op.kind != OpKind::Dot) return;
    const bool rows = rows_in_warp(fn, op, classes, users, def);
    const ir::Type &at = fn.type(op.operands[0]), &bt = fn.type(op.operands[1]), &ct = fn.type(op.results[0]);
    int64_t m = ct.shape[0], n = ct.shape[1], k = at.shape[1];
    const bool tf32 = ir::is_tf32_dot(op);
    std::vector<std::string> why_not;  // per instruction of the dot's types that does not fit
    for (size_t i = 0; i < target.matrix_instructions.size(); ++i) {
      const MatrixInstruction &mi = target.matrix_instructions[i];
      if (mi.a != at.elem || mi.b != bt.elem || mi.acc != ct.elem || mi.tf32 != tf32) continue;
      std::string tile = fmt::format("{} ({} x {} x {})", mi.name, mi.m, mi.n, mi.k);
      if (m % mi.m || n % mi.n || k % mi.k) {
        why_not.push_back(fmt::format("{}: m, n, k = {}, {}, {} are not multiples of its tile", tile, m, n, k));
        continue;
      }
      std::array<int, 2> warps = mma_warps(m, n, mi, num_warps, rows);
      if (warps[0] == 0) {
        if (mi.warps_per_instruction > 1)
          why_not.push_back(fmt::format("{}: its warpgroups of {} warps stacked along m need num_warps (here {}) a multiple of {} and m a multiple of {} x the "
                                        "warpgroups",
                                        tile, mi.warps_per_instruction, num_warps, mi.warps_per_instruction, mi.m));
        else
          why_not.push_back(fmt::format("{}: too few tiles for {} warps to own some", tile, num_warps));
        continue;
      }
      plan.dot_instruction.emplace_back(&op, int(i));
      chosen.emplace_back(&op, mma_layout(mi, warps));
      return;
    }
    if (!why_not.empty()) plan.warnings.push_back(fma_fallback(fn, op, target, fmt::format("{}", fmt::join(why_not, "; "))));
  });
  // Every value joined to an mma dot's result takes its layout; then, in program order until
  // nothing changes (loops feed back), elementwise ops of an mma value (casts, scaling,
  // activations of the accumulator) keep it, so the accumulator is not converted for them.
  auto set_class = [&](ir::ValueId v, const Layout &l) {
    ir::ValueId root = classes.find(v);
    bool changed = false;
    for (size_t u = 0; u < plan.layout.size(); ++u)
      if (classes.find(ir::ValueId(u)) == root && !(plan.layout[u] == l)) {
        plan.layout[u] = l;
        changed = true;
      }
    return changed;
  };
  for (auto &[op, layout] : chosen) set_class(op->results[0], layout);
  for (bool changed = !chosen.empty(); changed;) {
    changed = false;
    walk(fn.body, [&](const ir::Op &op) {
      if (!ir::is_elementwise(op.kind) || op.results.empty()) return;
      ir::ValueId v = op.results[0];
      if (plan.layout[size_t(v)].kind == LayoutKind::Mma) return;
      for (ir::ValueId x : op.operands)
        if (plan.layout[size_t(x)].kind == LayoutKind::Mma && fn.type(x).shape == fn.type(v).shape) {
          changed |= set_class(v, plan.layout[size_t(x)]);
          return;
        }
    });
  }
  // A dot whose result ended up in another dot's layout (the same block shape, a different
  // warp tiling) multiplies with FMAs.
  for (auto &[op, layout] : chosen)
    if (!(plan.layout[size_t(op->results[0])] == layout)) {
      std::erase_if(plan.dot_instruction, [&](auto &entry) { return entry.first == op; });
      plan.warnings.push_back(fma_fallback(fn, *op, target, "its result is held in another dot's accumulator layout (the same block shape, another warp tiling)"));
    }
}

// A store of an mma value with elements of 4 bytes or more writes straight from the
// accumulator fragments: a warp's row segments are 8 lanes x 2 elements (mma.sync) or 16
// or 32 lanes x 1 (MFMA) = 32 bytes or more, whole sectors. Narrower elements (f16 outputs) go through shared memory to a blocked
// layout, whose 16-byte vector stores keep rows whole. The store's pointers and mask are
// recomputed at the elements the store's pointer layout gives each thread.
void store_in_mma_layout(const ir::Function &fn, LayoutPlan &plan, LayoutClasses &classes, const std::vector<const ir::Op *> &def) {
  walk(fn.body, [&](const ir::Op &op) {
    if (op.kind != OpKind::Store) return;
    const Layout &value = plan.layout[size_t(op.operands[1])];
    if (value.kind != LayoutKind::Mma || dtype_bytes(fn.type(op.operands[0]).elem) < 4) return;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      ir::ValueId x = op.operands[i];
      const ir::Op *d = def[size_t(x)];
      if (i == 1 || !d || !is_index_math(*d, fn.type(x)) || !classes.alone(x)) continue;
      plan.layout[size_t(x)] = value;
    }
  });
}

// Row vectors of a dot's accumulator. A reduction along the rows of a value in an Mma layout
// whose warps hold whole rows (warps_per_cta[1] == 1) leaves each row's result in the lanes that
// hold the row (lower_reduce.cpp); it, the row vectors computed from it (elementwise ops of its
// shape, and what loops carry of them: attention's running maximum and sum) take a Slice of that
// layout when every use reads them so: elementwise ops among themselves and expand_dims past
// axis 0 (broadcast back along the rows, read from the same registers). Any other use (a store,
// a reduction of the vector, a view across it) leaves the whole group blocked, converted
// through shared memory as before. Operands of another layout (a loaded bias) are converted
// where read.
void choose_row_slices(const ir::Function &fn, LayoutPlan &plan, LayoutClasses &classes, const std::vector<const ir::Op *> &def, const Users &users) {
  std::map<ir::ValueId, std::vector<ir::ValueId>> members;  // of each layout class, by its root
  for (size_t v = 0; v < fn.values.size(); ++v) members[classes.find(ir::ValueId(v))].push_back(ir::ValueId(v));
  walk(fn.body, [&](const ir::Op &reduce) {
    if (!ir::is_reduction(reduce.kind) || reduce.ints.empty() || reduce.ints[0] != 1 || fn.type(reduce.operands[0]).shape.rank != 2) return;
    const Layout &parent = plan.layout[size_t(reduce.operands[0])];
    ir::ValueId start = reduce.results[0];
    if (parent.kind != LayoutKind::Mma || parent.warps_per_cta[1] != 1 || plan.layout[size_t(start)].kind == LayoutKind::Slice) return;
    const ir::Shape &shape = fn.type(start).shape;
    std::set<ir::ValueId> group;
    std::vector<ir::ValueId> todo;
    auto add = [&](ir::ValueId x) {
      for (ir::ValueId m : members[classes.find(x)])
        if (group.insert(m).second) todo.push_back(m);
    };
    add(start);
    bool ok = true;
    while (!todo.empty() && ok) {
      ir::ValueId x = todo.back();
      todo.pop_back();
      if (const ir::Op *d = def[size_t(x)]) {
        if (ir::is_reduction(d->kind)) {
          const Layout &in = plan.layout[size_t(d->operands[0])];
          ok = d->ints[0] == 1 && in.kind == LayoutKind::Mma && in == parent;
        } else if (ir::is_elementwise(d->kind)) {
          for (ir::ValueId o : d->operands)  // row vectors it combines: computed rows, not loaded ones
            if (const ir::Op *od = def[size_t(o)]; fn.type(o).shape == shape && (!od || ir::is_reduction(od->kind) || ir::is_elementwise(od->kind) || od->kind == OpKind::For))
              add(o);
        } else {
          ok = d->kind == OpKind::For || is_index_math(*d, fn.type(x)) || d->kind == OpKind::Constant;
        }
      }
      if (auto used = users.find(x); used != users.end())
        for (const ir::Op *u : used->second) {
          if (!ok) break;
          if (ir::is_elementwise(u->kind) && fn.type(u->results[0]).shape == shape) add(u->results[0]);
          else if (u->kind == OpKind::ExpandDims) ok = u->ints[0] != 0;
          else ok = u->kind == OpKind::For || u->kind == OpKind::Yield;
        }
    }
    if (!ok) return;
    const Layout slice = slice_layout(parent, 1);
    for (ir::ValueId x : group) plan.layout[size_t(x)] = slice;
  });
}

}  // namespace

LayoutPlan assign_layouts(const ir::Function &fn, const TargetInfo &target, int num_warps) {
  if (num_warps < 1 || (num_warps & (num_warps - 1)) || num_warps * target.warp_size > target.max_threads_per_block)
    throw Error(fmt::format("kernel '{}': num_warps = {} must be a power of two with at most {} threads per program on {}", fn.name, num_warps,
                            target.max_threads_per_block, target.name));
  LayoutPlan plan;
  plan.num_warps = num_warps;
  // The narrowest element each shape is moved to or from global memory with.
  std::map<std::vector<int64_t>, int> narrowest;
  auto note = [&](ir::ValueId ptrs) {
    const ir::Type &t = fn.type(ptrs);
    if (t.shape.rank == 0) return;
    int &bytes = narrowest.try_emplace(t.shape.vec(), 4).first->second;
    bytes = std::min(bytes, dtype_bytes(t.elem));
  };
  walk(fn.body, [&](const ir::Op &op) {
    if (op.kind == OpKind::Load || ir::writes_memory(op.kind)) note(op.operands[0]);
  });

  std::map<std::vector<int64_t>, Layout> by_shape;
  plan.layout.resize(fn.values.size());
  for (size_t v = 0; v < fn.values.size(); ++v) {
    const ir::Shape &s = fn.values[v].shape;
    if (s.rank == 0) continue;
    auto it = by_shape.find(s.vec());
    if (it == by_shape.end()) {
      auto n = narrowest.find(s.vec());
      int vec = target.global_vector_bytes / (n == narrowest.end() ? 4 : n->second);
      it = by_shape.emplace(s.vec(), blocked_for(s, vec, target.warp_size, num_warps)).first;
    }
    plan.layout[v] = it->second;
  }

  LayoutClasses classes(fn);
  std::vector<const ir::Op *> def(fn.values.size(), nullptr);
  Users users;
  walk(fn.body, [&](const ir::Op &op) {
    for (ir::ValueId r : op.results) def[size_t(r)] = &op;
    for (ir::ValueId x : op.operands) users[x].push_back(&op);
  });
  choose_mma_layouts(fn, target, num_warps, plan, classes, def, users);
  store_in_mma_layout(fn, plan, classes, def);
  choose_row_slices(fn, plan, classes, def, users);

  std::vector<AxisInfo> info = analyze_axis_info(fn);
  walk(fn.body, [&](const ir::Op &op) {
    if (op.kind != OpKind::Load && op.kind != OpKind::Store) return;
    const ir::Type &pt = fn.type(op.operands[0]);
    if (pt.shape.rank == 0) return;
    int bytes = dtype_bytes(pt.elem);
    const AxisInfo &p = info[size_t(op.operands[0])];
    ir::ValueId iterated = op.kind == OpKind::Load ? op.results[0] : op.operands[0];  // whose registers the access walks
    int64_t width = std::min<int64_t>({plan.layout[size_t(iterated)].size_per_thread[size_t(pt.shape.rank - 1)], p.contiguity,
                                       p.divisibility / bytes, target.global_vector_bytes / bytes});
    size_t mask = op.kind == OpKind::Load ? 1 : 2;
    if (op.operands.size() > mask) width = std::min(width, info[size_t(op.operands[mask])].constancy);
    if (op.kind == OpKind::Load && op.operands.size() > 2) width = std::min(width, info[size_t(op.operands[2])].constancy);
    width = pow2_floor(std::max<int64_t>(width, 1));
    if (width > 1) plan.vector_width.emplace_back(&op, int(width));
  });
  return plan;
}

}  // namespace kdsl::codegen::gpu
