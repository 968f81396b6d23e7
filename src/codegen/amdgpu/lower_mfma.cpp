// lower_mfma.cpp - dot on AMD matrix cores: operands staged in LDS, 8- or 16-byte fragment reads, MFMA into the accumulator layout
#include <fmt/format.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>

#include <map>

#include <kdsl/error.h>

#include "codegen/amdgpu/amdgpu_target.h"
#include "codegen/amdgpu/mfma_fragments.h"
#include "codegen/gpu/gpu_lowering.h"
#include "codegen/gpu/staged_tile.h"

namespace kdsl::codegen::amdgpu {
namespace {

// The intrinsic of each MatrixInstruction name target_info.cpp lists for AMD.
llvm::Intrinsic::ID mfma_intrinsic(const MatrixInstruction &mi) {
  static const std::map<std::string, llvm::Intrinsic::ID> ids = {
      {"mfma.f32.32x32x8f16", llvm::Intrinsic::amdgcn_mfma_f32_32x32x8f16},
      {"mfma.f32.16x16x16f16", llvm::Intrinsic::amdgcn_mfma_f32_16x16x16f16},
      {"mfma.f32.32x32x8bf16.1k", llvm::Intrinsic::amdgcn_mfma_f32_32x32x8bf16_1k},
      {"mfma.f32.16x16x16bf16.1k", llvm::Intrinsic::amdgcn_mfma_f32_16x16x16bf16_1k},
      {"mfma.i32.32x32x8i8", llvm::Intrinsic::amdgcn_mfma_i32_32x32x8i8},
      {"mfma.i32.16x16x16i8", llvm::Intrinsic::amdgcn_mfma_i32_16x16x16i8},
      {"mfma.i32.32x32x16.i8", llvm::Intrinsic::amdgcn_mfma_i32_32x32x16_i8},
      {"mfma.i32.16x16x32.i8", llvm::Intrinsic::amdgcn_mfma_i32_16x16x32_i8},
  };
  auto it = ids.find(mi.name);
  if (it == ids.end()) internal_error(std::string("amdgpu: no MFMA intrinsic for the matrix instruction ") + mi.name);
  return it->second;
}

}  // namespace

// The result's layout is the instruction's accumulator layout (assign_layouts): wave (wm, wn)
// owns instruction tiles (tm, tn) at rows tm * tile(0) + wm * m, columns tn * tile(1) + wn * n,
// and its registers there are the D fragment (mfma_fragments.h). A is staged row-major and B
// transposed ([n][k]), both k-contiguous, so each lane's fragment (kpl consecutive k) is one
// LDS read. Per k step of the instruction: one read per m tile for A and per n tile for B,
// then one MFMA per (tm, tn). The k steps are unrolled (K is a block extent).
void emit_mfma_dot(gpu::GpuLowering &g, const ir::Op &op, const MatrixInstruction &mi) {
  using gpu::IrInt, gpu::Layout, gpu::LayoutKind, gpu::RegisterMap;
  ir::ValueId a = op.operands[0], b = op.operands[1], v = op.results[0];
  const ir::Type &at = g.fn_.type(a), &ct = g.fn_.type(v);
  const Layout &l = g.plan_.layout[size_t(v)];
  if (l.kind != LayoutKind::Mma) internal_error(fmt::format("amdgpu: MFMA dot of '{}' without an mma result layout ({})", g.fn_.name, l.str()));
  if (g.state_[size_t(a)].staged || g.state_[size_t(b)].staged) internal_error("amdgpu: MFMA operands are never pipelined (no async copies)");
  int64_t M = ct.shape[0], N = ct.shape[1], K = at.shape[1];
  int eb = dtype_bytes(at.elem), kpl = mfma_k_per_lane(mi);
  llvm::IRBuilder<> &b_ = g.b_;

  std::vector<llvm::Value *> acc = g.regs_as(op.operands[2], v);
  std::vector<llvm::Value *> a_regs = g.to_regs(a), b_regs = g.to_regs(b);

  // 1. Operands into LDS, k contiguous in both, one barrier pair around the writes.
  int64_t row_bytes = gpu::staged_row_bytes(K * eb);
  llvm::Value *sa = g.allocate_shared(M * row_bytes), *sb = g.allocate_shared(N * row_bytes);
  g.barrier_before_write();
  gpu::StagedLayout rows{.row_bytes = row_bytes};
  g.stage_operand(a, a_regs, sa, rows, false);
  g.stage_operand(b, b_regs, sb, rows, true);
  g.barrier_after_write();

  // 2. This lane's fragment origins (the same formulas the host model checks).
  IrInt lane{&b_, g.lane_}, warp{&b_, g.warp_}, zero{&b_, b_.getInt32(0)};
  llvm::Value *warp_row = thread_offset(l, 0, zero, warp).v, *warp_col = thread_offset(l, 1, zero, warp).v;
  MfmaCoord<IrInt> a0 = mfma_a_origin(mi, lane), b0 = mfma_b_origin(mi, lane);
  llvm::Function *intrinsic = llvm::Intrinsic::getDeclaration(&g.m_, mfma_intrinsic(mi));
  llvm::Type *operand_type = intrinsic->getFunctionType()->getParamType(0);  // <4 x half>, <4 x i16>, i32, i64
  auto *acc_type = llvm::cast<llvm::FixedVectorType>(intrinsic->getReturnType());
  llvm::Type *fragment_type = llvm::FixedVectorType::get(g.storage_type(at.elem), unsigned(kpl));
  auto fragment = [&](llvm::Value *tile, llvm::Value *row, llvm::Value *col) {
    llvm::Value *offset = b_.CreateAdd(b_.CreateMul(row, b_.getInt32(uint32_t(row_bytes))), b_.CreateMul(col, b_.getInt32(uint32_t(eb))));
    llvm::Value *p = b_.CreateInBoundsGEP(b_.getInt8Ty(), tile, offset);
    return b_.CreateBitCast(b_.CreateAlignedLoad(fragment_type, p, llvm::Align(uint64_t(kpl) * uint64_t(eb))), operand_type);
  };
  auto plus = [&](llvm::Value *x, int64_t c) { return b_.CreateAdd(x, b_.getInt32(uint32_t(c))); };

  const RegisterMap &map = g.registers(v);
  auto c_reg = [&](int64_t tm, int64_t tn, int i) {
    int r = mfma_c_register(l, map, mi, int(tm), int(tn), i);
    if (r < 0) internal_error(fmt::format("amdgpu mfma: no accumulator register for tile ({}, {}) element {} in {}", tm, tn, i, l.str()));
    return size_t(r);
  };

  // 3. The k steps.
  int64_t tiles_m = M / l.tile(0), tiles_n = N / l.tile(1);
  int elements = mfma_c_elements(mi);
  for (int64_t k0 = 0; k0 < K; k0 += mi.k) {
    std::vector<llvm::Value *> fa, fb;
    for (int64_t tm = 0; tm < tiles_m; ++tm) fa.push_back(fragment(sa, b_.CreateAdd(plus(warp_row, tm * l.tile(0)), a0.row.v), plus(a0.col.v, k0)));
    for (int64_t tn = 0; tn < tiles_n; ++tn) fb.push_back(fragment(sb, b_.CreateAdd(plus(warp_col, tn * l.tile(1)), b0.col.v), plus(b0.row.v, k0)));
    for (int64_t tm = 0; tm < tiles_m; ++tm)
      for (int64_t tn = 0; tn < tiles_n; ++tn) {
        llvm::Value *c = llvm::PoisonValue::get(acc_type);
        for (int i = 0; i < elements; ++i) c = b_.CreateInsertElement(c, acc[c_reg(tm, tn, i)], uint64_t(i));
        llvm::Value *d = b_.CreateCall(intrinsic, {fa[size_t(tm)], fb[size_t(tn)], c, b_.getInt32(0), b_.getInt32(0), b_.getInt32(0)});
        for (int i = 0; i < elements; ++i) acc[c_reg(tm, tn, i)] = b_.CreateExtractElement(d, uint64_t(i));
      }
  }
  g.shared_dirty_ = true;  // the fragment reads came from the staged tiles
  g.set_regs(v, std::move(acc));
}

}  // namespace kdsl::codegen::amdgpu
