// lower_reduce.cpp - reductions: in each thread, across lanes with shfl.sync.bfly, across warps in shared memory
#include <fmt/format.h>
#include <llvm/IR/Intrinsics.h>

#include <map>

#include <kdsl/error.h>

#include "codegen/gpu/gpu_lowering.h"

namespace kdsl::codegen::gpu {
namespace {

struct Partial {
  llvm::Value *value = nullptr, *index = nullptr;  // index: argmax / argmin only
};

class Combiner {
 public:
  Combiner(llvm::IRBuilder<> &b, OpKind kind, DType elem, llvm::Type *ty) : b_(b), kind_(kind), fp_(is_float(elem)), sign_(!is_unsigned(elem)), ty_(ty) {}

  bool with_index() const { return kind_ == OpKind::ArgMax || kind_ == OpKind::ArgMin; }

  Partial identity() const {
    bool largest_first = kind_ == OpKind::ReduceMin || kind_ == OpKind::ArgMin;  // min starts at +max
    Partial p;
    if (kind_ == OpKind::ReduceSum) p.value = fp_ ? llvm::ConstantFP::get(ty_, 0.0) : llvm::ConstantInt::get(ty_, 0);
    else if (fp_) p.value = llvm::ConstantFP::getInfinity(ty_, !largest_first);
    else {
      unsigned bits = ty_->getIntegerBitWidth();
      llvm::APInt v = sign_ ? (largest_first ? llvm::APInt::getSignedMaxValue(bits) : llvm::APInt::getSignedMinValue(bits))
                            : (largest_first ? llvm::APInt::getMaxValue(bits) : llvm::APInt::getMinValue(bits));
      p.value = b_.getInt(v);
    }
    if (with_index()) p.index = b_.getInt32(INT32_MAX);
    return p;
  }

  Partial combine(const Partial &a, const Partial &x) const {
    switch (kind_) {
      case OpKind::ReduceSum: return {fp_ ? b_.CreateFAdd(a.value, x.value) : b_.CreateAdd(a.value, x.value), nullptr};
      case OpKind::ReduceMax:
        return {fp_ ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, a.value, x.value)
                    : b_.CreateBinaryIntrinsic(sign_ ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, a.value, x.value), nullptr};
      case OpKind::ReduceMin:
        return {fp_ ? b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, a.value, x.value)
                    : b_.CreateBinaryIntrinsic(sign_ ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, a.value, x.value), nullptr};
      default: {  // strictly better, or as good at a smaller index: the first index wins
        bool mx = kind_ == OpKind::ArgMax;
        llvm::Value *better = fp_ ? (mx ? b_.CreateFCmpOGT(x.value, a.value) : b_.CreateFCmpOLT(x.value, a.value))
                                  : (mx ? (sign_ ? b_.CreateICmpSGT(x.value, a.value) : b_.CreateICmpUGT(x.value, a.value))
                                        : (sign_ ? b_.CreateICmpSLT(x.value, a.value) : b_.CreateICmpULT(x.value, a.value)));
        llvm::Value *tie = fp_ ? b_.CreateFCmpOEQ(x.value, a.value) : b_.CreateICmpEQ(x.value, a.value);
        better = b_.CreateOr(better, b_.CreateAnd(tie, b_.CreateICmpSLT(x.index, a.index)));
        return {b_.CreateSelect(better, x.value, a.value), b_.CreateSelect(better, x.index, a.index)};
      }
    }
  }

 private:
  llvm::IRBuilder<> &b_;
  OpKind kind_;
  bool fp_, sign_;
  llvm::Type *ty_;
};

}  // namespace

void GpuLowering::emit_reduce(const ir::Op &op) {
  ir::ValueId x = op.operands[0], v = op.results[0];
  const ir::Type &in = fn_.type(x), &out = fn_.type(v);
  int axis = int(op.ints[0]);
  const Layout &l = plan_.layout[size_t(x)];
  llvm::Type *ty = compute_type(in.elem);
  Combiner combiner(b_, op.kind, in.elem, ty);
  std::vector<llvm::Value *> xs = to_regs(x);
  const RegisterMap &map = registers(x);

  // 1. In each thread: registers that differ only along the axis.
  std::map<std::vector<int>, size_t> group_of;
  std::vector<Partial> partials;
  std::vector<Index> group_index;  // an index of each group's first register
  for (int r = 0; r < map.count; ++r) {
    std::vector<int> key(map.offset[size_t(r)].begin(), map.offset[size_t(r)].begin() + in.shape.rank);
    key[size_t(axis)] = 0;
    Index idx = own_index(x, r);
    auto [it, fresh] = group_of.emplace(key, partials.size());
    if (fresh) {
      partials.push_back(combiner.identity());
      group_index.push_back(idx);
    }
    Partial element{xs[size_t(r)], combiner.with_index() ? idx.coords[size_t(axis)] : nullptr};
    if (llvm::Value *inside = idx.axis_valid[size_t(axis)]) {  // duplicates along the axis count once
      Partial none = combiner.identity();
      element.value = b_.CreateSelect(inside, element.value, none.value);
      if (element.index) element.index = b_.CreateSelect(inside, element.index, none.index);
    }
    partials[it->second] = combiner.combine(partials[it->second], element);
  }

  // 2. Across the lanes along the axis: a butterfly leaves every lane with the result.
  int lane_stride = 1, warp_stride = 1;
  for (int i = 0; i < l.rank && l.order[size_t(i)] != axis; ++i) {
    lane_stride *= l.threads_per_warp[size_t(l.order[size_t(i)])];
    warp_stride *= l.warps_per_cta[size_t(l.order[size_t(i)])];
  }
  for (int k = l.threads_per_warp[size_t(axis)] / 2; k >= 1; k /= 2)
    for (Partial &p : partials) {
      Partial other{shuffle_xor_any(hooks_, b_, p.value, k * lane_stride), p.index ? shuffle_xor_any(hooks_, b_, p.index, k * lane_stride) : nullptr};
      p = combiner.combine(p, other);
    }

  auto finish = [&](llvm::Value *value) { return is_float(in.elem) ? round_to(value, in.elem) : value; };
  int rows = l.warps_per_cta[size_t(axis)];
  if (out.shape.rank == 0 && rows == 1) return set_scalar(v, combiner.with_index() ? partials[0].index : finish(partials[0].value));
  // Into a Slice of the input's layout (the plan's row vectors): with the axis inside each warp,
  // every lane holds its rows' results now; register r of the slice is the group at its offsets.
  if (const Layout &sliced = plan_.layout[size_t(v)]; sliced.kind == LayoutKind::Slice && sliced.sliced_axis == axis && sliced.same_fields(l) && rows == 1) {
    const RegisterMap &out_map = registers(v);
    std::vector<llvm::Value *> regs;
    for (int r = 0; r < out_map.count; ++r) {
      std::vector<int> key;
      for (int d = 0, i = 0; d < in.shape.rank; ++d) key.push_back(d == axis ? 0 : out_map.offset[size_t(r)][size_t(i++)]);
      auto it = group_of.find(key);
      if (it == group_of.end()) internal_error(fmt::format("GPU lowering: reduce of '{}': no partial for register {} of {}", fn_.name, r, sliced.str()));
      const Partial &p = partials[it->second];
      regs.push_back(combiner.with_index() ? p.index : finish(p.value));
    }
    return set_regs(v, std::move(regs));
  }

  // 3. Across warps: each warp's partials in a row of shared memory, combined when read.
  ir::Type row_type = in.with_shape(ir::Shape{int64_t(rows) * out.shape.numel()});
  ir::Type index_type = row_type.with_elem(DType::I32);
  llvm::Value *values = allocate_shared(shared_bytes_of(row_type));
  llvm::Value *indices = combiner.with_index() ? allocate_shared(shared_bytes_of(index_type)) : nullptr;
  llvm::Value *warp_row = b_.CreateAnd(b_.CreateLShr(warp_, uint64_t(__builtin_ctz(unsigned(warp_stride)))), uint64_t(rows - 1));
  barrier_before_write();
  for (size_t g = 0; g < partials.size(); ++g) {
    const Index &idx = group_index[g];
    llvm::Value *linear = b_.getInt32(0), *inside = nullptr;
    for (int d = 0; d < in.shape.rank; ++d) {
      if (d == axis) continue;
      linear = b_.CreateAdd(b_.CreateMul(linear, b_.getInt32(uint32_t(in.shape[d]))), idx.coords[size_t(d)]);
      if (llvm::Value *ok = idx.axis_valid[size_t(d)]) inside = inside ? b_.CreateAnd(inside, ok) : ok;
    }
    llvm::Value *slot = b_.CreateAdd(b_.CreateMul(warp_row, b_.getInt32(uint32_t(out.shape.numel()))), linear);
    auto write = [&] {
      store_shared(values, row_type, {slot}, partials[g].value);
      if (indices) store_shared(indices, index_type, {slot}, partials[g].index);
    };
    if (inside) when(inside, write);  // a duplicate of another thread's group writes nothing
    else write();
  }
  barrier_after_write();
  ValueState st;
  st.partials = values;
  st.partial_index = indices;
  st.partial_rows = rows;
  st.depth = depth_;
  state_[size_t(v)] = st;
  if (out.shape.rank == 0) set_scalar(v, read_partials(v, {}));
}

llvm::Value *GpuLowering::read_partials(ir::ValueId v, const Index &idx) {
  const ir::Op &op = *def_[size_t(v)];
  const ir::Type &in = fn_.type(op.operands[0]), &out = fn_.type(v);
  const ValueState &st = state_[size_t(v)];
  Combiner combiner(b_, op.kind, in.elem, compute_type(in.elem));
  ir::Type row_type = in.with_shape(ir::Shape{int64_t(st.partial_rows) * out.shape.numel()});
  ir::Type index_type = row_type.with_elem(DType::I32);
  llvm::Value *linear = b_.getInt32(0);
  for (int d = 0; d < out.shape.rank; ++d) linear = b_.CreateAdd(b_.CreateMul(linear, b_.getInt32(uint32_t(out.shape[d]))), idx.coords[size_t(d)]);
  Partial acc = combiner.identity();
  for (int row = 0; row < st.partial_rows; ++row) {
    llvm::Value *slot = b_.CreateAdd(linear, b_.getInt32(uint32_t(row * out.shape.numel())));
    Partial p{load_shared(st.partials, row_type, {slot}), st.partial_index ? load_shared(st.partial_index, index_type, {slot}) : nullptr};
    acc = row ? combiner.combine(acc, p) : p;
  }
  if (combiner.with_index()) return acc.index;
  return is_float(in.elem) ? round_to(acc.value, in.elem) : acc.value;
}

}  // namespace kdsl::codegen::gpu
