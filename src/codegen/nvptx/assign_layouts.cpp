// assign_layouts.cpp - blocked layouts from num_warps and shapes; vector widths from axis info
#include "codegen/nvptx/assign_layouts.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include <kdsl/error.h>

#include "codegen/nvptx/axis_info.h"

namespace kdsl::codegen::nvptx {
namespace {

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

BlockedLayout blocked_for(const ir::Shape &s, int vec, int warp_size, int num_warps) {
  BlockedLayout l;
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
  return l;
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
    if (op.kind == OpKind::Load || op.kind == OpKind::Store || op.kind == OpKind::AtomicAdd) note(op.operands[0]);
  });

  std::map<std::vector<int64_t>, BlockedLayout> by_shape;
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

  std::vector<AxisInfo> info = analyze_axis_info(fn);
  walk(fn.body, [&](const ir::Op &op) {
    if (op.kind != OpKind::Load && op.kind != OpKind::Store) return;
    const ir::Type &pt = fn.type(op.operands[0]);
    if (pt.shape.rank == 0) return;
    int bytes = dtype_bytes(pt.elem);
    const AxisInfo &p = info[size_t(op.operands[0])];
    int64_t width = std::min<int64_t>({plan.layout[size_t(op.operands[0])].size_per_thread[size_t(pt.shape.rank - 1)], p.contiguity,
                                       p.divisibility / bytes, target.global_vector_bytes / bytes});
    size_t mask = op.kind == OpKind::Load ? 1 : 2;
    if (op.operands.size() > mask) width = std::min(width, info[size_t(op.operands[mask])].constancy);
    if (op.kind == OpKind::Load && op.operands.size() > 2) width = std::min(width, info[size_t(op.operands[2])].constancy);
    width = pow2_floor(std::max<int64_t>(width, 1));
    if (width > 1) plan.vector_width.emplace_back(&op, int(width));
  });
  return plan;
}

}  // namespace kdsl::codegen::nvptx
