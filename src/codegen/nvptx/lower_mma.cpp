// lower_mma.cpp - dot on tensor cores: operands staged in shared memory, ldmatrix fragments, mma.sync into the accumulator layout
#include <fmt/format.h>

#include <kdsl/error.h>

#include "codegen/gpu/gpu_lowering.h"
#include "codegen/nvptx/mma_fragments.h"
#include "codegen/nvptx/nvptx_intrinsics.h"
#include "codegen/nvptx/nvptx_target.h"

namespace kdsl::codegen::nvptx {
namespace {

// An operand tile in shared memory: row-major, in the element's storage type, rows padded
// to an odd number of 16-byte chunks (mma_fragments.h: ldmatrix without bank conflicts).
struct StagedTile {
  llvm::Value *base = nullptr;
  gpu::StagedLayout layout;
};

// Two 16-bit elements (f32 compute values of f16 or bf16) in one word, `low` in the low bits.
llvm::Value *pack_pair(gpu::GpuLowering &g, llvm::Value *low, llvm::Value *high, DType elem) {
  auto bits = [&](llvm::Value *x) { return g.b_.CreateZExt(g.b_.CreateBitCast(g.to_storage(x, elem), g.b_.getInt16Ty()), g.b_.getInt32Ty()); };
  return g.b_.CreateOr(bits(low), g.b_.CreateShl(bits(high), 16));
}

}  // namespace

std::vector<llvm::Value *> a_fragment_from_accumulator(gpu::GpuLowering &g, ir::ValueId a, const std::vector<llvm::Value *> &regs, int64_t row0, int64_t s) {
  const gpu::RegisterAt reg_at(g.registers(a));
  const DType elem = g.fn_.type(a).elem;
  const MatrixInstruction &f16 = target_info("sm_80").matrix_instructions[0];  // the m16n8 C fragment every 16-bit form shares
  auto element = [&](int64_t tile, int i) {
    FragmentElement c = mma_c_element(f16, 0, i);
    int r = reg_at(int(row0) + c.row, int(tile * f16.n) + c.col);
    if (r < 0) internal_error(fmt::format("nvptx: no register of A for n8 tile {} element {} (rows from {}) in {}", tile, i, row0, g.plan_.layout[size_t(a)].str()));
    return regs[size_t(r)];
  };
  std::vector<llvm::Value *> words;
  for (int j = 0; j < 4; ++j) {
    int64_t tile = 2 * s + (j >> 1);
    int first = 2 * (j & 1);
    words.push_back(pack_pair(g, element(tile, first), element(tile, first + 1), elem));
  }
  return words;
}

// The result's layout is the instruction's accumulator layout (assign_layouts): warp (wm, wn)
// owns instruction tiles (tm, tn) at rows tm * tile(0) + wm * m, columns tn * tile(1) + wn * n,
// and its registers there are the C fragment (mma_fragments.h). Per k step of the
// instruction: one ldmatrix.x4 per m tile for A, one per two n tiles for B (x2 for a last
// odd one), then an mma.sync per (tm, tn). The k steps are unrolled (K is a block extent).
void emit_mma_dot(gpu::GpuLowering &g, const ir::Op &op, const MatrixInstruction &mi) {
  using gpu::Index, gpu::IrInt, gpu::Layout, gpu::LayoutKind;
  ir::ValueId a = op.operands[0], b = op.operands[1], v = op.results[0];
  const ir::Type &at = g.fn_.type(a), &ct = g.fn_.type(v);
  const Layout &l = g.plan_.layout[size_t(v)];
  if (l.kind != LayoutKind::Mma) internal_error(fmt::format("nvptx: mma dot of '{}' without an mma result layout ({})", g.fn_.name, l.str()));
  int64_t M = ct.shape[0], N = ct.shape[1], K = at.shape[1];
  int eb = dtype_bytes(at.elem);
  // B as trans(x): x staged as stored, [n][k] (staged_tile.h), perhaps copied by cp.async.
  ir::ValueId b_src = gpu::dot_b_source(g.fn_, g.def_, b);
  bool b_as_stored = b_src == b && gpu::b_as_stored(mi, N);  // [k][n], else [n][k]

  std::vector<llvm::Value *> acc = g.regs_as(op.operands[2], v);
  // An operand a pipelined load copied with cp.async is already staged (lower_pipeline.cpp).
  llvm::Value *a_staged = g.state_[size_t(a)].staged, *b_staged = g.state_[size_t(b_src)].staged;
  // A held in this dot's own accumulator layout with every column in each warp (attention's
  // P after the first dot, warps along m) is already the A fragment: packed into pairs
  // (a_fragment_from_accumulator), not staged through shared memory.
  const bool a_in_registers = !a_staged && g.plan_.layout[size_t(a)] == l && l.warps_per_cta[1] == 1 && eb == 2 && mi.k == 16;
  const bool stage_a = !a_staged && !a_in_registers;
  std::vector<llvm::Value *> a_regs = a_staged ? std::vector<llvm::Value *>{} : g.to_regs(a);
  std::vector<llvm::Value *> b_regs = b_staged ? std::vector<llvm::Value *>{} : g.to_regs(b_src);

  // 1. Operands into shared memory, one barrier pair around the writes.
  StagedTile sa{a_staged, gpu::staged_layout(mi, M, K * eb)};
  StagedTile sb{b_staged, b_as_stored ? gpu::staged_layout(mi, K, N * eb) : gpu::staged_layout(mi, N, K * eb)};
  if (b_staged && !b_as_stored && b_src == b) internal_error("nvptx mma: a pipelined B operand must be staged as stored");
  if (stage_a) sa.base = g.allocate_shared(sa.layout.bytes());
  if (!sb.base) sb.base = g.allocate_shared(sb.layout.bytes());
  if (stage_a || !b_staged) g.barrier_before_write();
  if (stage_a) g.stage_operand(a, a_regs, sa.base, sa.layout, false);
  if (!b_staged) g.stage_operand(b_src, b_regs, sb.base, sb.layout, b_src == b && !b_as_stored);
  if (stage_a || !b_staged) g.barrier_after_write();

  // 2. Where this lane points ldmatrix (the same formulas the host tests check).
  IrInt lane{&g.b_, g.lane_}, warp{&g.b_, g.warp_}, zero{&g.b_, g.b_.getInt32(0)};
  llvm::Value *warp_row = thread_offset(l, 0, zero, warp).v, *warp_col = thread_offset(l, 1, zero, warp).v;
  int64_t tiles_m = M / l.tile(0), tiles_n = N / l.tile(1);
  TileCoord<IrInt> a_row = ldmatrix_a_row(lane, eb);
  TileCoord<IrInt> b_pair = b_as_stored ? ldmatrix_b_trans_row(lane, l.tile(1)) : ldmatrix_b_row(lane, eb, l.tile(1));
  TileCoord<IrInt> b_single = b_as_stored ? ldmatrix_b_trans_row(lane, 0) : ldmatrix_b_row(lane, eb, 0);
  auto address = [&](const StagedTile &tile, llvm::Value *row, llvm::Value *col) {
    return g.staged_address(tile.base, tile.layout, row, g.b_.CreateMul(col, g.b_.getInt32(uint32_t(eb))));
  };
  auto plus = [&](llvm::Value *x, int64_t c) { return g.b_.CreateAdd(x, g.b_.getInt32(uint32_t(c))); };

  // The accumulator register holding C element i of tile (tm, tn): its offset from this
  // thread's first element is the tile origin plus lane 0's position of element i.
  const gpu::RegisterAt reg_at(g.registers(v));
  auto c_reg = [&](int64_t tm, int64_t tn, int i) {
    FragmentElement c0 = mma_c_element(mi, 0, i);
    int r = reg_at(int(tm * l.tile(0)) + c0.row, int(tn * l.tile(1)) + c0.col);
    if (r < 0) internal_error(fmt::format("nvptx mma: no accumulator register for tile ({}, {}) element {} in {}", tm, tn, i, l.str()));
    return size_t(r);
  };

  // 3. The k steps.
  for (int64_t k0 = 0; k0 < K; k0 += mi.k) {
    std::vector<std::vector<llvm::Value *>> fa(static_cast<size_t>(tiles_m)), fb(static_cast<size_t>(tiles_n));
    for (int64_t tm = 0; tm < tiles_m; ++tm) {
      if (a_in_registers) {
        fa[size_t(tm)] = a_fragment_from_accumulator(g, a, a_regs, tm * l.tile(0), k0 / mi.k);
        continue;
      }
      llvm::Value *row = g.b_.CreateAdd(plus(warp_row, tm * l.tile(0)), a_row.row.v);
      fa[size_t(tm)] = ldmatrix(g.b_, address(sa, row, plus(a_row.col.v, k0)), 4, false);
    }
    for (int64_t tn = 0; tn < tiles_n; tn += 2) {
      bool pair = tn + 1 < tiles_n;
      const TileCoord<IrInt> &at_lane = pair ? b_pair : b_single;
      llvm::Value *n = b_as_stored ? at_lane.col.v : at_lane.row.v, *k = b_as_stored ? at_lane.row.v : at_lane.col.v;
      n = g.b_.CreateAdd(plus(warp_col, tn * l.tile(1)), n);
      k = plus(k, k0);
      std::vector<llvm::Value *> regs = b_as_stored ? ldmatrix(g.b_, address(sb, k, n), pair ? 4 : 2, true) : ldmatrix(g.b_, address(sb, n, k), pair ? 4 : 2, false);
      fb[size_t(tn)] = {regs[0], regs[1]};
      if (pair) fb[size_t(tn + 1)] = {regs[2], regs[3]};
    }
    for (int64_t tm = 0; tm < tiles_m; ++tm)
      for (int64_t tn = 0; tn < tiles_n; ++tn) {
        std::vector<llvm::Value *> c;
        for (int i = 0; i < kMmaCElements; ++i) c.push_back(acc[c_reg(tm, tn, i)]);
        std::vector<llvm::Value *> d = mma_sync(g.b_, mi, fa[size_t(tm)], fb[size_t(tn)], c);
        for (int i = 0; i < kMmaCElements; ++i) acc[c_reg(tm, tn, i)] = d[size_t(i)];
      }
  }
  g.shared_dirty_ = true;  // ldmatrix read the staged tiles
  g.set_regs(v, std::move(acc));
}

}  // namespace kdsl::codegen::nvptx
