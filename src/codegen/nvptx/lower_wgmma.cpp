// lower_wgmma.cpp - dot on Hopper's warpgroup MMA: operands staged swizzled in shared memory, read by descriptors, wgmma.mma_async into the accumulator layout
#include <fmt/format.h>

#include <kdsl/error.h>

#include "codegen/gpu/gpu_lowering.h"
#include "codegen/nvptx/mma_fragments.h"
#include "codegen/nvptx/nvptx_intrinsics.h"
#include "codegen/nvptx/nvptx_target.h"

namespace kdsl::codegen::nvptx {

// The plan (assign_layouts) stacks the warps along m, so warpgroup w = warp / 4 holds rows
// tm * tile(0) + 64 w .. + 63 of each m tile tm, and every column: exactly the m64nNk16
// accumulator (mma_fragments.h) once per (tm, n chunk). A is staged [m][k]; B [n][k] when it
// is trans(x) (x as stored), else [k][n] as stored where b_as_stored allows, read MN-major
// (the instruction's transpose bit; the descriptor's leading offset steps between slabs of
// n), else [n][k] transposed through registers; all swizzled (staged_tile.h). Pipelined
// operands arrive that way from cp.async (lower_pipeline.cpp). An
// A already held as wgmma's register A fragment is not staged (below). A descriptor points at
// 8-row-aligned rows and a k step's 32 bytes inside one swizzled row, so the hardware's
// swizzle of the address bits is the staging's. Then
//   fence.proxy.async, bar.sync             (ordinary writes -> the async proxy's reads; where
//                                            this dot stages an operand itself)
//   wgmma.fence
//   per k step (32 bytes: k of 16 or 32), per m tile, per n chunk: wgmma.mma_async with B's
//   descriptor and A's descriptor or registers
//   wgmma.commit_group, wgmma.wait_group 0  (the accumulators are ready; 1 where the dot
//                                            overlaps its loop's next iteration)
// The k steps are unrolled (K is a block extent).
void emit_wgmma_dot(gpu::GpuLowering &g, const ir::Op &op, const MatrixInstruction &mi) {
  using gpu::Layout, gpu::LayoutKind, gpu::StagedLayout;
  ir::ValueId a = op.operands[0], b = op.operands[1], v = op.results[0];
  const ir::Type &at = g.fn_.type(a), &ct = g.fn_.type(v);
  const Layout &l = g.plan_.layout[size_t(v)];
  if (l.kind != LayoutKind::Mma || l.warps_per_cta[1] != 1 || l.warps_per_cta[0] % mi.warps_per_instruction)
    internal_error(fmt::format("nvptx: wgmma dot of '{}' without warpgroups stacked along m ({})", g.fn_.name, l.str()));
  int64_t M = ct.shape[0], N = ct.shape[1], K = at.shape[1];
  int eb = dtype_bytes(at.elem);
  ir::ValueId b_src = gpu::dot_b_source(g.fn_, g.def_, b);  // [n][k] when b is trans(x)

  const bool b_mn_major = b_src == b && gpu::b_as_stored(mi, N);  // [k][n], read MN-major
  std::vector<llvm::Value *> acc = g.regs_as(op.operands[2], v);
  llvm::Value *a_staged = g.state_[size_t(a)].staged, *b_staged = g.state_[size_t(b_src)].staged;
  if (b_staged && b_src == b && !b_mn_major) internal_error("nvptx wgmma: a pipelined B operand must be trans(x) or MN-major");
  // A held in this dot's own accumulator layout (a previous wgmma's result through
  // elementwise ops: attention's P) is already wgmma's register A fragment: per warp,
  // mma.sync's m16n8k16 A fragment, whose k halves are two adjacent n8 tiles of the
  // accumulator. It is packed into pairs, not staged through shared memory.
  const bool a_in_registers = !a_staged && g.plan_.layout[size_t(a)] == l && eb == 2;
  std::vector<llvm::Value *> a_regs = a_staged ? std::vector<llvm::Value *>{} : g.to_regs(a);
  std::vector<llvm::Value *> b_regs = b_staged ? std::vector<llvm::Value *>{} : g.to_regs(b_src);

  // 1. Operands into shared memory, swizzled, visible to the async proxy.
  StagedLayout la = gpu::staged_layout(mi, M, K * eb), lb = b_mn_major ? gpu::staged_layout(mi, K, N * eb) : gpu::staged_layout(mi, N, K * eb);
  const bool stage_a = !a_staged && !a_in_registers;
  llvm::Value *sa = a_staged ? a_staged : stage_a ? g.allocate_shared(la.bytes(), StagedLayout::kSwizzleAlign) : nullptr;
  llvm::Value *sb = b_staged ? b_staged : g.allocate_shared(lb.bytes(), StagedLayout::kSwizzleAlign);
  // Tiles copied ahead or staged before the loop were fenced where they were written
  // (lower_pipeline.cpp, GpuTarget::async_proxy_fence): only what this dot writes needs it.
  if (stage_a || !b_staged) {
    g.barrier_before_write();
    if (stage_a) g.stage_operand(a, a_regs, sa, la, false);
    if (!b_staged) g.stage_operand(b_src, b_regs, sb, lb, b_src == b && !b_mn_major);
    fence_proxy_async(g.b_);
    g.barrier_after_write();
  }

  // 2. The accumulator register holding element i (mma.sync's C numbering) of n8 tile tn in
  // m tile tm; A's words per (m tile, k step) when A comes from registers.
  const gpu::RegisterAt reg_at(g.registers(v));
  auto c_reg = [&](int64_t tm, int64_t tn, int i) {
    FragmentElement c0 = wgmma_c_element(0, i);
    int r = reg_at(int(tm * l.tile(0)) + c0.row, int(tn * mi.n) + c0.col);
    if (r < 0) internal_error(fmt::format("nvptx wgmma: no register for tile ({}, {}) element {} in {}", tm, tn, i, l.str()));
    return size_t(r);
  };
  const int64_t tiles_m = M / l.tile(0);
  std::vector<llvm::Value *> a_words;
  if (a_in_registers)
    for (int64_t tm = 0; tm < tiles_m; ++tm)
      for (int64_t s = 0; s < K / mi.k; ++s) {
        std::vector<llvm::Value *> words = a_fragment_from_accumulator(g, a, a_regs, tm * l.tile(0), s);
        a_words.insert(a_words.end(), words.begin(), words.end());
      }

  // 3. The k steps. A descriptor per (k step, m tile) and per (k step, n chunk).
  const int n = gpu::descriptor_n(N, mi);
  if (n == 0) internal_error(fmt::format("nvptx wgmma: N = {} is not a multiple of {}", N, mi.n));
  const int64_t chunks = N / n;
  llvm::Value *warpgroup_row = g.b_.CreateMul(g.b_.CreateLShr(g.warp_, 2), g.b_.getInt32(uint32_t(mi.m)));
  auto descriptor = [&](llvm::Value *base, const StagedLayout &layout, llvm::Value *row, int64_t k0) {
    llvm::Value *at_k = g.staged_address(base, layout, row, g.b_.getInt32(uint32_t(k0 * eb)));
    return wgmma_descriptor(g.b_, at_k, layout.stride_bytes(), layout.swizzle_mode());
  };
  // MN-major B [k][n]: the k step's first row, the chunk's first slab; 8 rows of k apart by the
  // stride offset, slabs of n by the leading offset.
  auto descriptor_mn = [&](int64_t chunk, int64_t k0) {
    llvm::Value *at = g.staged_address(sb, lb, g.b_.getInt32(uint32_t(k0)), g.b_.getInt32(uint32_t(chunk * n * eb)));
    return wgmma_descriptor(g.b_, at, lb.stride_bytes(), lb.swizzle_mode(), lb.slab_bytes);
  };
  // The fence passes A's words through with the accumulators: they are written before it.
  std::vector<llvm::Value *> fenced = acc;
  fenced.insert(fenced.end(), a_words.begin(), a_words.end());
  fenced = wgmma_fence(g.b_, fenced);
  std::copy(fenced.begin(), fenced.begin() + std::ptrdiff_t(acc.size()), acc.begin());
  std::copy(fenced.begin() + std::ptrdiff_t(acc.size()), fenced.end(), a_words.begin());
  for (int64_t k0 = 0; k0 < K; k0 += mi.k)
    for (int64_t tm = 0; tm < tiles_m; ++tm) {
      llvm::Value *desc_a = a_in_registers ? nullptr : descriptor(sa, la, g.b_.CreateAdd(warpgroup_row, g.b_.getInt32(uint32_t(tm * l.tile(0)))), k0);
      size_t first_word = size_t((tm * (K / mi.k) + k0 / mi.k) * 4);
      for (int64_t chunk = 0; chunk < chunks; ++chunk) {
        llvm::Value *desc_b = b_mn_major ? descriptor_mn(chunk, k0) : descriptor(sb, lb, g.b_.getInt32(uint32_t(chunk * n)), k0);
        std::vector<size_t> regs;
        for (int i = 0; i < n / 2; ++i) regs.push_back(c_reg(tm, chunk * n / mi.n + i / 4, i % 4));
        std::vector<llvm::Value *> c;
        for (size_t r : regs) c.push_back(acc[r]);
        std::vector<llvm::Value *> d =
            a_in_registers ? wgmma_mma_async_register_a(g.b_, mi, n, {a_words.begin() + std::ptrdiff_t(first_word), a_words.begin() + std::ptrdiff_t(first_word + 4)},
                                                        desc_b, c, b_mn_major)
                           : wgmma_mma_async(g.b_, mi, n, desc_a, desc_b, c, b_mn_major);
        for (size_t i = 0; i < regs.size(); ++i) acc[regs[i]] = d[i];
      }
    }
  wgmma_commit_group(g.b_);
  // A dot that overlaps its loop's next iteration (lower_pipeline.cpp) lets its own group run
  // on and waits for the previous iteration's; the loop's last iteration waits for its own.
  acc = wgmma_wait_group(g.b_, g.dot_overlaps(op) ? 1 : 0, acc);
  g.shared_dirty_ = true;  // wgmma read the staged tiles
  g.set_regs(v, std::move(acc));
}

}  // namespace kdsl::codegen::nvptx
