// layout.cpp - blocked layouts: printing, comparing and the per-thread register map
#include "codegen/nvptx/layout.h"

#include <fmt/format.h>

namespace kdsl::codegen::nvptx {

bool BlockedLayout::operator==(const BlockedLayout &o) const {
  if (rank != o.rank) return false;
  for (int d = 0; d < rank; ++d)
    if (size_per_thread[d] != o.size_per_thread[d] || threads_per_warp[d] != o.threads_per_warp[d] || warps_per_cta[d] != o.warps_per_cta[d] ||
        order[d] != o.order[d])
      return false;
  return true;
}

std::string BlockedLayout::str() const {
  auto list = [&](const std::array<int, ir::kMaxRank> &a) { return fmt::format("[{}]", fmt::join(a.begin(), a.begin() + rank, ",")); };
  return fmt::format("blocked{{spt={} tpw={} wpc={} order={}}}", list(size_per_thread), list(threads_per_warp), list(warps_per_cta), list(order));
}

RegisterMap register_map(const BlockedLayout &layout, const ir::Shape &shape) {
  RegisterMap map;
  std::array<int, ir::kMaxRank> per_axis{};
  map.count = 1;
  for (int d = 0; d < layout.rank; ++d) {
    int tile = layout.tile(d);
    int reps = int((shape[d] + tile - 1) / tile);
    per_axis[size_t(d)] = reps * layout.size_per_thread[d];
    map.count *= per_axis[size_t(d)];
  }
  map.offset.resize(size_t(map.count));
  for (int r = 0; r < map.count; ++r) {
    int rest = r;
    for (int d = layout.rank - 1; d >= 0; --d) {
      int i = rest % per_axis[size_t(d)];
      rest /= per_axis[size_t(d)];
      int spt = layout.size_per_thread[d];
      map.offset[size_t(r)][size_t(d)] = (i / spt) * layout.tile(d) + i % spt;
    }
  }
  return map;
}

}  // namespace kdsl::codegen::nvptx
