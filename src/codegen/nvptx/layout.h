// layout.h - distributed layouts: which thread of a CTA holds which elements of a block value
#pragma once
#include <array>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace kdsl::codegen::nvptx {

// Triton's blocked layout. Along axis d a CTA covers a tile of
//   size_per_thread[d] * threads_per_warp[d] * warps_per_cta[d]
// elements; a block larger than the tile repeats it (each thread holds more registers), a
// smaller one wraps (several threads hold the same element, "duplicates"). Lanes and warps
// are numbered along `order` (order[0] is the fastest-varying axis: the contiguous one).
// Every count is a power of two.
struct BlockedLayout {
  int rank = 0;
  std::array<int, ir::kMaxRank> size_per_thread{}, threads_per_warp{}, warps_per_cta{}, order{};

  int tile(int d) const { return size_per_thread[d] * threads_per_warp[d] * warps_per_cta[d]; }
  bool operator==(const BlockedLayout &o) const;
  std::string str() const;  // "blocked{spt=[1,4] tpw=[4,8] wpc=[4,1] order=[1,0]}"
};

// The elements one thread holds of a block of `shape` in `layout`, as register indices.
// Register r covers, along each axis d, the coordinate
//   rep * tile(d) + thread_part(d) * size_per_thread[d] + s   (then wrapped modulo shape[d])
// where (rep, s) is given here and thread_part(d) depends on the lane and warp. Registers are
// numbered with the last axis fastest and, within it, s fastest, so consecutive registers
// along the contiguous axis are consecutive in memory (the unit of a vector access).
struct RegisterMap {
  int count = 0;
  std::vector<std::array<int, ir::kMaxRank>> offset;  // per register: rep * tile + s, per axis
};
RegisterMap register_map(const BlockedLayout &layout, const ir::Shape &shape);

// Per value, the layout its registers are held in (rank-0 values: rank 0, uniform scalars),
// and per load, store and atomic op the elements each thread accesses at once.
struct LayoutPlan {
  std::vector<BlockedLayout> layout;  // by ValueId
  std::vector<std::pair<const ir::Op *, int>> vector_width;
  int num_warps = 4;
  int width_of(const ir::Op *op) const {
    for (auto &[o, w] : vector_width)
      if (o == op) return w;
    return 1;
  }
};

}  // namespace kdsl::codegen::nvptx
