// layout.cpp - distributed layouts: printing, comparing, the mma layout and the per-thread register map
#include "codegen/gpu/layout.h"

#include <fmt/format.h>

namespace kdsl::codegen::gpu {

bool Layout::operator==(const Layout &o) const { return kind == o.kind && sliced_axis == o.sliced_axis && same_fields(o); }

bool Layout::same_fields(const Layout &o) const {
  if (rank != o.rank) return false;
  for (int d = 0; d < rank; ++d)
    if (size_per_thread[d] != o.size_per_thread[d] || threads_per_warp[d] != o.threads_per_warp[d] || warps_per_cta[d] != o.warps_per_cta[d] ||
        order[d] != o.order[d] || warp_tile[d] != o.warp_tile[d])
      return false;
  return true;
}

std::string Layout::str() const {
  auto list = [&](const std::array<int, ir::kMaxRank> &a) { return fmt::format("[{}]", fmt::join(a.begin(), a.begin() + rank, ",")); };
  std::string common = fmt::format("spt={} tpw={} wpc={} order={}", list(size_per_thread), list(threads_per_warp), list(warps_per_cta), list(order));
  if (kind == LayoutKind::Blocked) return fmt::format("blocked{{{}}}", common);
  if (kind == LayoutKind::Slice) return fmt::format("slice{{axis={} of {} warp_tile={}}}", sliced_axis, common, list(warp_tile));
  return fmt::format("mma{{{} warp_tile={}}}", common, list(warp_tile));
}

Layout slice_layout(const Layout &parent, int axis) {
  Layout l = parent;
  l.kind = LayoutKind::Slice;
  l.sliced_axis = axis;
  return l;
}

Layout mma_layout(const MatrixInstruction &instruction, std::array<int, 2> warps) {
  Layout l;
  l.kind = LayoutKind::Mma;
  l.rank = 2;
  for (size_t d = 0; d < 2; ++d) {
    l.size_per_thread[d] = instruction.c_size_per_thread[d];
    l.threads_per_warp[d] = instruction.c_threads_per_warp[d];
    l.warps_per_cta[d] = warps[d];
  }
  l.warp_tile[0] = instruction.m / instruction.warps_per_instruction;
  l.warp_tile[1] = instruction.n;
  l.order[0] = 1;
  l.order[1] = 0;
  return l;
}

RegisterMap register_map(const Layout &layout, const ir::Shape &shape) {
  if (layout.sliced_axis >= 0) {  // the parent's registers at offset 0 along the dropped axis, that axis removed
    Layout parent = layout;
    parent.kind = LayoutKind::Blocked;
    parent.sliced_axis = -1;
    const int axis = layout.sliced_axis;
    std::vector<int64_t> extents;
    for (int d = 0, i = 0; d < layout.rank; ++d) extents.push_back(d == axis ? layout.tile(d) : shape[i++]);
    RegisterMap full = register_map(parent, ir::Shape::from(extents)), map;
    for (const auto &offset : full.offset) {
      if (offset[size_t(axis)] != 0) continue;
      std::array<int, ir::kMaxRank> kept{};
      for (int d = 0, i = 0; d < layout.rank; ++d)
        if (d != axis) kept[size_t(i++)] = offset[size_t(d)];
      map.offset.push_back(kept);
    }
    map.count = int(map.offset.size());
    return map;
  }
  RegisterMap map;
  std::array<int, ir::kMaxRank> per_axis{}, inner{};
  map.count = 1;
  for (int d = 0; d < layout.rank; ++d) {
    int tile = layout.tile(d);
    int reps = int((shape[d] + tile - 1) / tile);
    inner[size_t(d)] = layout.warp_tile[d] / layout.lane_tile(d);
    per_axis[size_t(d)] = reps * inner[size_t(d)] * layout.size_per_thread[d];
    map.count *= per_axis[size_t(d)];
  }
  map.offset.resize(size_t(map.count));
  for (int r = 0; r < map.count; ++r) {
    int rest = r;
    for (int d = layout.rank - 1; d >= 0; --d) {
      int i = rest % per_axis[size_t(d)];
      rest /= per_axis[size_t(d)];
      int spt = layout.size_per_thread[d], in = inner[size_t(d)];
      int s = i % spt, repeat = (i / spt) % in, rep = i / spt / in;
      map.offset[size_t(r)][size_t(d)] = rep * layout.tile(d) + repeat * layout.lane_tile(d) + s;
    }
  }
  return map;
}

RegisterAt::RegisterAt(const RegisterMap &map) {
  for (int r = 0; r < map.count; ++r) at_[{map.offset[size_t(r)][0], map.offset[size_t(r)][1]}] = r;
}

int RegisterAt::operator()(int row, int col) const {
  auto it = at_.find({row, col});
  return it == at_.end() ? -1 : it->second;
}

}  // namespace kdsl::codegen::gpu
