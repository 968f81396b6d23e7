// layout.h - distributed layouts: which thread of a CTA holds which elements of a block value
#pragma once
#include <array>
#include <map>
#include <string>
#include <vector>

#include "codegen/target_info.h"
#include "ir/ir.h"

namespace kdsl::codegen::gpu {

enum class LayoutKind {
  Blocked,  // Triton's blocked layout: for loads, stores, elementwise math, reductions
  Mma,      // a matrix instruction's accumulator fragment, tiled over the warps (dot results)
  Slice,    // a parent layout with one axis dropped: its row vectors (slice_layout below)
};

// Along axis d a thread holds size_per_thread[d] consecutive elements; the lanes of a warp
// are laid out threads_per_warp[d] along d, and the warps warps_per_cta[d]. Lanes and warps
// are numbered along `order` (order[0] is the fastest-varying axis: the contiguous one).
// Every count is a power of two.
//
// warp_tile[d] is how many elements of d one warp covers before the next warp starts:
//  - Blocked: size_per_thread * threads_per_warp (the lanes' tile);
//  - Mma: the instruction's accumulator tile (m, n). The lanes' tile is smaller (mma.sync
//    m16n8: 8 x 8) and repeats inside it (rows g and g + 8): those repeats are more
//    registers of the same thread.
// The CTA covers tile(d) = warp_tile[d] * warps_per_cta[d] elements; a block larger than the
// tile repeats it (more registers), a smaller one wraps (several threads hold the same
// element, "duplicates"). An Mma layout always divides its block exactly.
//
// So along each axis a thread's elements are
//   thread_offset(d) + register offset(d), with
//   thread_offset(d) = warp part * warp_tile[d] + lane part * size_per_thread[d]
//   register offset  = rep * tile(d) + inner * size_per_thread[d] * threads_per_warp[d] + s
// The mma layout of a 64 x 32 f32 accumulator with 4 warps as 2 x 2 (m16n8):
//   warp (wm, wn), lane l (g = l / 4, t = l % 4) holds rows 16 wm + g + {0, 8} + {0, 32},
//   columns 8 wn + 2 t + {0, 1} + {0, 16}: 2 x 2 instruction tiles of 4 registers each.
// Wgmma's accumulator (m64nNk16 over a warpgroup) fits the same form: warp_tile (16, N).
//
// A Slice keeps its parent's fields (rank is the parent's) and names the dropped axis: it lays
// out values of rank - 1, whose axis d is the parent's field_axis(d). A thread holds the
// elements at its own coordinates along the kept axes; the threads that differ only along the
// dropped axis hold the same ones (duplicates). A reduction along a dot accumulator's rows
// whose warps hold whole rows leaves its result so, with nothing through shared memory, and
// a row vector in this layout broadcast back along the rows is read from the same registers.
struct Layout {
  LayoutKind kind = LayoutKind::Blocked;
  int rank = 0;
  std::array<int, ir::kMaxRank> size_per_thread{}, threads_per_warp{}, warps_per_cta{}, order{}, warp_tile{};
  int sliced_axis = -1;  // Slice: the parent's axis the values do not have

  int lane_tile(int d) const { return size_per_thread[d] * threads_per_warp[d]; }
  int tile(int d) const { return warp_tile[d] * warps_per_cta[d]; }
  // The field index of a value's axis d (a Slice skips its dropped axis).
  int field_axis(int d) const { return sliced_axis >= 0 && d >= sliced_axis ? d + 1 : d; }
  // Whether `o` has the same fields, whatever the kinds: a Slice and its parent.
  bool same_fields(const Layout &o) const;
  bool operator==(const Layout &o) const;
  std::string str() const;  // "blocked{spt=[1,4] tpw=[4,8] wpc=[4,1] order=[1,0]}", "mma{spt=... warp_tile=[16,8]}"
};

// The accumulator layout of `instruction` over a block with warps tiled warps[0] x warps[1]
// (rows, columns); warps are numbered columns fastest. Instructions with the same
// accumulator fragment (f16, bf16 and i8 mma.sync m16n8) share it.
Layout mma_layout(const MatrixInstruction &instruction, std::array<int, 2> warps);

// `parent` (rank 2 or more, not itself a slice) without its axis `axis`.
Layout slice_layout(const Layout &parent, int axis);

// This thread's first coordinate along `axis`: warp part * warp_tile + lane part *
// size_per_thread. A template so the lowering (Int = an LLVM value wrapper, gpu_lowering.h)
// and the host-side tests (Int = int) run the same arithmetic.
template <class Int>
Int thread_offset(const Layout &l, int axis, Int lane, Int warp) {
  axis = l.field_axis(axis);
  int lane_shift = 0, warp_shift = 0;
  for (int i = 0; i < l.rank; ++i) {
    int d = l.order[size_t(i)];
    if (d == axis) {
      Int lane_part = (lane >> lane_shift) & (l.threads_per_warp[size_t(d)] - 1);
      Int warp_part = (warp >> warp_shift) & (l.warps_per_cta[size_t(d)] - 1);
      return warp_part * l.warp_tile[size_t(d)] + lane_part * l.size_per_thread[size_t(d)];
    }
    lane_shift += __builtin_ctz(unsigned(l.threads_per_warp[size_t(d)]));
    warp_shift += __builtin_ctz(unsigned(l.warps_per_cta[size_t(d)]));
  }
  return lane * 0;
}

// The elements one thread holds of a block of `shape` in `layout`, as register indices:
// register r's offset from thread_offset along each axis. Registers are numbered with the
// last axis fastest and, within it, s fastest (then inner, then rep), so consecutive
// registers along the contiguous axis are consecutive in memory (the unit of a vector access).
struct RegisterMap {
  int count = 0;
  std::vector<std::array<int, ir::kMaxRank>> offset;  // per register, per axis
};
RegisterMap register_map(const Layout &layout, const ir::Shape &shape);

// The register of a 2-D RegisterMap at offset (row, col) from the thread's first element;
// -1 where the thread holds none there. The matrix-instruction lowerings find their fragment
// registers by offset with it.
class RegisterAt {
 public:
  explicit RegisterAt(const RegisterMap &map);
  int operator()(int row, int col) const;

 private:
  std::map<std::pair<int, int>, int> at_;
};

// A load inside a for_range body whose tile only a tensor-core dot reads: copied global ->
// shared with cp.async num_stages - 1 iterations ahead, straight into the layout the dot's
// ldmatrix reads (plan_pipelining.h).
struct PipelinedLoad {
  const ir::Op *load = nullptr, *loop = nullptr, *dot = nullptr;
  int operand = 0;  // of the dot: 0 (A) or 1 (B)
  // A TileLoad copied by TMA (one thread, a tensor map, an mbarrier a stage) instead of a
  // Load copied by each thread's cp.async.
  bool tensor_copy = false;
};

// Per value, the layout its registers are held in (rank-0 values: rank 0, uniform scalars),
// per load, store and atomic op the elements each thread accesses at once, per dot that
// runs on a matrix instruction, which one, the loads software-pipelined into shared memory, and
// the tile stores TMA writes.
struct LayoutPlan {
  std::vector<Layout> layout;  // by ValueId
  std::vector<std::pair<const ir::Op *, int>> vector_width;
  std::vector<std::pair<const ir::Op *, int>> dot_instruction;  // index into TargetInfo::matrix_instructions
  std::vector<PipelinedLoad> pipelined;
  std::vector<const ir::Op *> tensor_stores;  // TileStores written from shared memory by TMA (lower_tile_store.cpp)
  // Dots that run on FMAs although the target has a matrix instruction for their types, each
  // saying why (CompiledObject::warnings).
  std::vector<std::string> warnings;
  int num_stages = 1;
  int num_warps = 4;
  int width_of(const ir::Op *op) const {
    for (auto &[o, w] : vector_width)
      if (o == op) return w;
    return 1;
  }
  int instruction_of(const ir::Op *op) const {
    for (auto &[o, i] : dot_instruction)
      if (o == op) return i;
    return -1;
  }
  const PipelinedLoad *pipelined_load(const ir::Op *load) const {
    for (const PipelinedLoad &p : pipelined)
      if (p.load == load) return &p;
    return nullptr;
  }
};

}  // namespace kdsl::codegen::gpu
