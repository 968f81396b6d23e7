// lower_scan.cpp - inclusive scans (in each thread, across lanes with shfl.sync.bfly, across warps in shared memory) and gather
#include <fmt/format.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
#include <map>

#include <kdsl/error.h>

#include "codegen/gpu/gpu_lowering.h"

namespace kdsl::codegen::gpu {
namespace {

// sum, max or min of two elements, and the element that changes nothing: -0.0 for float sums
// (-0.0 + x is x, signed zeros included), NaN for float max and min (maxnum(NaN, x) is x, so
// a run of NaNs stays NaN as on the host), the type's extremes for integers.
class ScanCombiner {
 public:
  ScanCombiner(llvm::IRBuilder<> &b, OpKind kind, DType elem, llvm::Type *ty) : b_(b), kind_(kind), fp_(is_float(elem)), sign_(!is_unsigned(elem)), ty_(ty) {}

  llvm::Value *identity() const {
    if (fp_) return kind_ == OpKind::ScanSum ? llvm::ConstantFP::getNegativeZero(ty_) : llvm::ConstantFP::getNaN(ty_);
    unsigned bits = ty_->getIntegerBitWidth();
    if (kind_ == OpKind::ScanSum) return b_.getInt(llvm::APInt(bits, 0));
    bool max = kind_ == OpKind::ScanMax;
    return b_.getInt(sign_ ? (max ? llvm::APInt::getSignedMinValue(bits) : llvm::APInt::getSignedMaxValue(bits))
                           : (max ? llvm::APInt::getMinValue(bits) : llvm::APInt::getMaxValue(bits)));
  }

  // Every combine commutes, so callers pass the earlier part first only where it reads better;
  // float sums may round differently from the host's sequential order (by a few ulps).
  llvm::Value *combine(llvm::Value *earlier, llvm::Value *later) const {
    switch (kind_) {
      case OpKind::ScanSum: return fp_ ? b_.CreateFAdd(earlier, later) : b_.CreateAdd(earlier, later);
      case OpKind::ScanMax:
        return b_.CreateBinaryIntrinsic(fp_ ? llvm::Intrinsic::maxnum : sign_ ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, earlier, later);
      default:
        return b_.CreateBinaryIntrinsic(fp_ ? llvm::Intrinsic::minnum : sign_ ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, earlier, later);
    }
  }

 private:
  llvm::IRBuilder<> &b_;
  OpKind kind_;
  bool fp_, sign_;
  llvm::Type *ty_;
};

// The run of one thread along the scan axis for one position of the other axes and one
// repetition of the layout's tile: its registers in scan order.
struct Run {
  std::vector<int> regs;
  llvm::Value *total = nullptr, *before = nullptr;  // the thread's combine; the combine of the lanes before it
  llvm::Value *warp_total = nullptr;                 // of every lane of the warp along the axis
};

}  // namespace

// Along axis a of a blocked layout, element position p = rep * tile + warp_a * lane_tile +
// lane_a * spt + s: so the scan runs (1) over s in each thread's registers, (2) across the
// lanes along a with a butterfly that carries each lane's exclusive prefix and the warp's
// total, (3) across warps and repetitions through shared memory (each warp's totals, read
// back by every warp), then (4) each register combines the three. Elements the layout
// duplicates past the block's end along a sit after every real one, so they count as the
// identity and the real ones' results do not see them; their own registers are then filled
// from the real ones through shared memory. `reverse` runs every order backwards.
void GpuLowering::emit_scan(const ir::Op &op) {
  ir::ValueId x = op.operands[0], v = op.results[0];
  const ir::Type &t = fn_.type(v);
  const int axis = int(op.ints[0]);
  const bool reverse = op.ints[1] != 0;
  const Layout &l = plan_.layout[size_t(v)];
  if (l.kind != LayoutKind::Blocked) internal_error(fmt::format("GPU lowering: a scan's result is in {}, not a blocked layout", l.str()));
  ScanCombiner c(b_, op.kind, t.elem, compute_type(t.elem));

  std::vector<llvm::Value *> xs = regs_as(x, v);
  const RegisterMap &map = registers(v);
  const int64_t extent = t.shape[axis], tile = l.tile(axis), reps = (extent + tile - 1) / tile;
  const bool duplicated = reps * tile != extent;
  std::vector<Index> idx;
  for (int r = 0; r < map.count; ++r) {
    idx.push_back(own_index(v, r));
    if (llvm::Value *inside = idx.back().axis_valid[size_t(axis)]) xs[size_t(r)] = b_.CreateSelect(inside, xs[size_t(r)], c.identity());
  }

  // 1. Runs: registers grouped by the other axes' offsets (a "row") and the repetition, in
  // scan order; each thread scans its run.
  std::map<std::pair<std::vector<int>, int64_t>, Run> runs;
  for (int r = 0; r < map.count; ++r) {
    std::vector<int> row(map.offset[size_t(r)].begin(), map.offset[size_t(r)].begin() + t.shape.rank);
    row[size_t(axis)] = 0;
    runs[{row, map.offset[size_t(r)][size_t(axis)] / tile}].regs.push_back(r);  // ascending s
  }
  std::vector<llvm::Value *> local(size_t(map.count));
  for (auto &[key, run] : runs) {
    if (reverse) std::reverse(run.regs.begin(), run.regs.end());
    for (int r : run.regs) run.total = local[size_t(r)] = run.total ? c.combine(run.total, xs[size_t(r)]) : xs[size_t(r)];
  }

  // 2. Across lanes along the axis: at step k a lane takes its partner's group total into its
  // prefix when the partner comes before it.
  int lane_shift = 0, warp_shift = 0, lane_stride = 1;
  for (int i = 0; i < l.rank && l.order[size_t(i)] != axis; ++i) {
    lane_shift += __builtin_ctz(unsigned(l.threads_per_warp[size_t(l.order[size_t(i)])]));
    warp_shift += __builtin_ctz(unsigned(l.warps_per_cta[size_t(l.order[size_t(i)])]));
  }
  lane_stride = 1 << lane_shift;
  const int lanes = l.threads_per_warp[size_t(axis)], warps = l.warps_per_cta[size_t(axis)];
  llvm::Value *lane_a = b_.CreateAnd(b_.CreateLShr(lane_id(), uint64_t(lane_shift)), uint64_t(lanes - 1));
  llvm::Value *warp_a = b_.CreateAnd(b_.CreateLShr(warp_id(), uint64_t(warp_shift)), uint64_t(warps - 1));
  for (auto &[key, run] : runs) {
    run.before = c.identity();
    run.warp_total = run.total;
    for (int k = 1; k < lanes; k *= 2) {
      llvm::Value *partner = shuffle_xor_any(hooks_, b_, run.warp_total, k * lane_stride);
      llvm::Value *upper = b_.CreateICmpNE(b_.CreateAnd(lane_a, uint64_t(k)), b_.getInt32(0));
      llvm::Value *partner_first = reverse ? b_.CreateNot(upper) : upper;
      run.before = b_.CreateSelect(partner_first, c.combine(partner, run.before), run.before);
      run.warp_total = c.combine(run.warp_total, partner);
    }
  }

  // 3. Across warps and repetitions: carry[row, rep] combines every earlier repetition and
  // the earlier warps of this one.
  std::map<std::pair<std::vector<int>, int64_t>, llvm::Value *> carry;
  const int64_t rows = t.shape.numel() / extent;
  auto row_linear = [&](const Index &i) {
    llvm::Value *linear = b_.getInt32(0);
    for (int d = 0; d < t.shape.rank; ++d)
      if (d != axis) linear = b_.CreateAdd(b_.CreateMul(linear, b_.getInt32(uint32_t(t.shape[d]))), i.coords[size_t(d)]);
    return linear;
  };
  ir::Type totals_type = t.with_shape(ir::Shape{int64_t(warps) * reps * rows});
  llvm::Value *totals = nullptr;
  if (warps > 1) {
    totals = allocate_shared(shared_bytes_of(totals_type));
    barrier_before_write();
    for (auto &[key, run] : runs) {
      const Index &first = idx[size_t(run.regs.front())];
      llvm::Value *slot = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(warp_a, b_.getInt32(uint32_t(reps))), b_.getInt32(uint32_t(key.second))),
                                                    b_.getInt32(uint32_t(rows))),
                                       row_linear(first));
      llvm::Value *writer = b_.CreateICmpEQ(lane_a, b_.getInt32(0));  // one lane per warp row; duplicates of other axes write nothing
      for (int d = 0; d < t.shape.rank; ++d)
        if (d != axis && first.axis_valid[size_t(d)]) writer = b_.CreateAnd(writer, first.axis_valid[size_t(d)]);
      when(writer, [&] { store_shared(totals, totals_type, {slot}, run.warp_total); });
    }
    barrier_after_write();
  }
  std::map<std::vector<int>, std::vector<const Run *>> by_row;  // each row's runs by repetition
  for (auto &[key, run] : runs) {
    auto &list = by_row[key.first];
    list.resize(size_t(reps), nullptr);
    list[size_t(key.second)] = &run;
  }
  for (auto &[row, list] : by_row) {
    llvm::Value *running = c.identity();
    const Run *any = nullptr;
    for (const Run *r : list) any = any ? any : r;
    llvm::Value *linear = row_linear(idx[size_t(any->regs.front())]);
    for (int64_t step = 0; step < reps; ++step) {
      int64_t rep = reverse ? reps - 1 - step : step;
      const Run *run = list[size_t(rep)];
      if (warps == 1) {
        carry[{row, rep}] = running;
        if (run) running = c.combine(running, run->warp_total);
        continue;
      }
      llvm::Value *mine = running;
      for (int w = 0; w < warps; ++w) {
        int w_ordered = reverse ? warps - 1 - w : w;
        llvm::Value *slot = b_.getInt32(uint32_t((int64_t(w_ordered) * reps + rep) * rows));
        llvm::Value *total = load_shared(totals, totals_type, {b_.CreateAdd(slot, linear)});
        llvm::Value *earlier = reverse ? b_.CreateICmpUGT(b_.getInt32(uint32_t(w_ordered)), warp_a) : b_.CreateICmpULT(b_.getInt32(uint32_t(w_ordered)), warp_a);
        mine = b_.CreateSelect(earlier, c.combine(mine, total), mine);
        running = c.combine(running, total);
      }
      carry[{row, rep}] = mine;
    }
  }

  // 4. Each register: carry, then the lanes before, then its own run.
  std::vector<llvm::Value *> out(size_t(map.count));
  for (auto &[key, run] : runs) {
    llvm::Value *prefix = c.combine(carry.at(key), run.before);
    for (int r : run.regs) {
      llvm::Value *y = c.combine(prefix, local[size_t(r)]);
      out[size_t(r)] = is_float(t.elem) ? round_to(y, t.elem) : y;
    }
  }
  if (duplicated) {  // registers past the end read the real elements' results
    llvm::Value *base = allocate_shared(shared_bytes_of(t));
    barrier_before_write();
    for (int r = 0; r < map.count; ++r) {
      auto write = [&] { store_shared(base, t, idx[size_t(r)].coords, out[size_t(r)]); };
      if (idx[size_t(r)].valid) when(idx[size_t(r)].valid, write);
      else write();
    }
    barrier_after_write();
    for (int r = 0; r < map.count; ++r) out[size_t(r)] = load_shared(base, t, idx[size_t(r)].coords);
  }
  set_regs(v, std::move(out));
}

// result[..i..] = src[..index[..i..]..] along the axis: src read through a shared copy (or
// recomputed, for index arithmetic) at the coordinates each thread's result registers name.
void GpuLowering::emit_gather(const ir::Op &op) {
  ir::ValueId src = op.operands[0], index = op.operands[1], v = op.results[0];
  const ir::Type &st = fn_.type(src), &it = fn_.type(index), &t = fn_.type(v);
  const size_t axis = size_t(op.ints[0]);
  const ir::Op *def = def_[size_t(src)];
  if (!(def && is_index_math(*def, st) && !state_[size_t(src)].has_regs)) shared_copy(src);
  prepare(index, &plan_.layout[size_t(v)]);
  std::vector<llvm::Value *> out;
  for (int r = 0; r < registers(v).count; ++r) {
    Index at = own_index(v, r);
    llvm::Value *i = element(index, at);
    i = is_unsigned(it.elem) ? b_.CreateZExt(i, b_.getInt64Ty()) : b_.CreateSExt(i, b_.getInt64Ty());
    llvm::Value *inside = b_.CreateICmpULT(i, b_.getInt64(uint64_t(st.shape[int(axis)])));  // negative ones wrap to huge
    Index from;
    from.coords = at.coords;
    from.coords[axis] = b_.CreateTrunc(b_.CreateSelect(inside, i, b_.getInt64(0)), b_.getInt32Ty());
    out.push_back(b_.CreateSelect(inside, element(src, from), constant(t.with_shape({}), 0, 0.0)));
  }
  set_regs(v, std::move(out));
}

}  // namespace kdsl::codegen::gpu
