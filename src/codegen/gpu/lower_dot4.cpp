// lower_dot4.cpp - dot4 on the GPU: each thread's sums from the 4-byte groups of both operands behind them, one target instruction per sum (dp4a, v_dot4)
#include <map>

#include "codegen/gpu/gpu_lowering.h"

namespace kdsl::codegen::gpu {

namespace {
using Offsets = std::array<int, ir::kMaxRank>;
}  // namespace

// out[..., j] = acc[..., j] + sum_t a[..., 4j + t] * b[..., 4j + t]. The operands are read in
// the result's layout four times as wide along the last axis: the thread that holds sum j
// then holds bytes 4j .. 4j + 3 of both operands (thread offsets and register offsets scale
// by 4 along that axis; a wrapping layout wraps at four times the extent alike), so no
// value crosses threads. The planner gives a byte block that layout whenever its shape is
// loaded 16 bytes a thread and its sums 4 a thread; operands held otherwise go through a
// shared copy, which is correct for any layout.
void GpuLowering::emit_dot4(const ir::Op &op) {
  ir::ValueId a = op.operands[0], bv = op.operands[1], v = op.results[0];
  const ir::Type &vt = fn_.type(v);
  const size_t last = size_t(vt.shape.rank - 1);
  const Layout &out = plan_.layout[size_t(v)];
  Layout wide = out;
  wide.size_per_thread[last] *= 4;
  wide.warp_tile[last] *= 4;
  const bool blocked = out.kind == LayoutKind::Blocked;
  const RegisterMap &out_regs = registers(v);

  // Per operand: for each of this thread's sums and each t, the operand register holding
  // byte 4j + t, or none (-1) when the operand is not held in `wide`.
  auto byte_registers = [&](ir::ValueId x) {
    std::vector<std::array<int, 4>> regs(size_t(out_regs.count), {-1, -1, -1, -1});
    if (!blocked || !(plan_.layout[size_t(x)] == wide)) return regs;
    std::map<Offsets, int> by_offset;
    const RegisterMap &map = registers(x);
    for (int q = 0; q < map.count; ++q) by_offset.emplace(map.offset[size_t(q)], q);
    for (int r = 0; r < out_regs.count; ++r)
      for (int t = 0; t < 4; ++t) {
        Offsets key = out_regs.offset[size_t(r)];
        key[last] = key[last] * 4 + t;
        auto it = by_offset.find(key);
        if (it == by_offset.end()) return std::vector<std::array<int, 4>>(size_t(out_regs.count), {-1, -1, -1, -1});
        regs[size_t(r)][size_t(t)] = it->second;
      }
    return regs;
  };
  std::vector<std::array<int, 4>> a_regs = byte_registers(a), b_regs = byte_registers(bv);
  prepare(a, a_regs.empty() || a_regs[0][0] < 0 ? nullptr : &wide);
  prepare(bv, b_regs.empty() || b_regs[0][0] < 0 ? nullptr : &wide);
  std::vector<llvm::Value *> sums = regs_as(op.operands[2], v);

  for (int r = 0; r < out_regs.count; ++r) {
    Index o = own_index(v, r);
    auto word = [&](ir::ValueId x, const std::array<int, 4> &regs) {
      const ir::Type &xt = fn_.type(x);
      llvm::Value *w = b_.getInt32(0);
      for (int t = 0; t < 4; ++t) {
        Index at;
        at.coords = o.coords;
        at.coords[last] = b_.CreateAdd(b_.CreateMul(o.coords[last], b_.getInt32(4)), b_.getInt32(uint32_t(t)));
        if (regs[size_t(t)] >= 0) {
          at.layout = &plan_.layout[size_t(x)];
          at.shape = &xt.shape;
          at.reg = regs[size_t(t)];
        }
        llvm::Value *byte = b_.CreateZExt(element(x, at), b_.getInt32Ty());
        w = b_.CreateOr(w, t == 0 ? byte : b_.CreateShl(byte, uint64_t(8 * t)));
      }
      return w;
    };
    llvm::Value *wa = word(a, a_regs[size_t(r)]), *wb = word(bv, b_regs[size_t(r)]);
    sums[size_t(r)] = hooks_.dot4(b_, wa, wb, sums[size_t(r)], fn_.type(a).elem == DType::I8, fn_.type(bv).elem == DType::I8);
  }
  set_regs(v, std::move(sums));
}

}  // namespace kdsl::codegen::gpu
