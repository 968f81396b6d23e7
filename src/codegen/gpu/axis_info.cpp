// axis_info.cpp - contiguity, constancy and divisibility along the last axis, op by op
#include "codegen/gpu/axis_info.h"

#include <algorithm>

namespace kdsl::codegen::gpu {
namespace {

constexpr int64_t kHuge = int64_t(1) << 30;

int64_t pow2_dividing(int64_t v) {
  if (v == 0) return kHuge;
  int64_t p = 1;
  while (p < kHuge && v % (p * 2) == 0) p *= 2;
  return p;
}

class Analysis {
 public:
  explicit Analysis(const ir::Function &fn) : fn_(fn), info_(fn.values.size()) {}

  std::vector<AxisInfo> run() {
    for (const ir::Argument &a : fn_.args) {
      const ir::Type &t = fn_.type(a.value);
      AxisInfo &i = info_[size_t(a.value)];
      i.constancy = kHuge;
      i.divisibility = t.is_ptr ? dtype_bytes(t.elem) : 1;
      if (a.spec == ir::ArgClass::Divisible16) i.divisibility = 16;
      if (a.spec == ir::ArgClass::EqualToOne) i.divisibility = 1;
    }
    region(fn_.body);
    return std::move(info_);
  }

 private:
  const AxisInfo &of(ir::ValueId v) const { return info_[size_t(v)]; }
  // Divisibility every element has (not only each contiguous group's first).
  int64_t every(ir::ValueId v) const { return of(v).contiguity > 1 ? 1 : of(v).divisibility; }

  void region(const ir::Region &r) {
    for (const ir::Op &op : r.ops) {
      if (op.kind == OpKind::For) {
        const ir::Region &body = op.regions[0];
        AxisInfo &iv = info_[size_t(body.args[0])];
        iv.constancy = kHuge;
        iv.divisibility = std::min(every(op.operands[0]), every(op.operands[2]));
        for (size_t i = 1; i < body.args.size(); ++i) unknown(body.args[i]);
      }
      for (const ir::Region &inner : op.regions) region(inner);
      if (op.results.size() == 1) info_[size_t(op.results[0])] = compute(op);
      else
        for (ir::ValueId v : op.results) unknown(v);
    }
  }

  void unknown(ir::ValueId v) {
    const ir::Type &t = fn_.type(v);
    info_[size_t(v)] = {1, t.shape.rank == 0 ? kHuge : 1, t.is_ptr ? dtype_bytes(t.elem) : 1};
  }

  AxisInfo compute(const ir::Op &op) {
    const ir::Type &out = fn_.type(op.results[0]);
    int64_t last = out.shape.rank ? out.shape[out.shape.rank - 1] : 1;
    auto arg = [&](size_t i) { return of(op.operands[i]); };
    AxisInfo r;
    if (out.shape.rank == 0 || last == 1) r.constancy = kHuge;
    switch (op.kind) {
      case OpKind::Constant:
        return {1, kHuge, is_float(out.elem) ? 1 : pow2_dividing(op.ints.empty() ? 0 : op.ints[0])};
      case OpKind::ProgramId:
      case OpKind::NumPrograms:
        return {1, kHuge, 1};
      case OpKind::Arange:
        return {last, 1, pow2_dividing(op.ints[0])};
      case OpKind::Broadcast: {
        const ir::Shape &in = fn_.type(op.operands[0]).shape;
        if (in.rank && in[in.rank - 1] == 1 && last > 1) return {1, kHuge, every(op.operands[0])};
        return arg(0);
      }
      case OpKind::ExpandDims: {
        if (op.ints[0] == out.shape.rank - 1) return {1, kHuge, every(op.operands[0])};
        return arg(0);
      }
      case OpKind::Trans: {
        int n = out.shape.rank;
        if (n && op.ints[size_t(n - 1)] == n - 1) return arg(0);
        return {1, 1, every(op.operands[0])};
      }
      case OpKind::Reshape: {
        const ir::Shape &in = fn_.type(op.operands[0]).shape;
        if (in.rank && in[in.rank - 1] == last) return arg(0);
        return {1, 1, every(op.operands[0])};
      }
      case OpKind::Add:
      case OpKind::PtrAdd: {
        if (!out.is_ptr && is_float(out.elem)) break;
        AxisInfo a = arg(0), b = arg(1);
        int64_t scale = op.kind == OpKind::PtrAdd ? dtype_bytes(out.elem) : 1;
        r.contiguity = std::max(std::min(a.contiguity, b.constancy), std::min(b.contiguity, a.constancy));
        r.constancy = std::min(a.constancy, b.constancy);
        r.divisibility = std::min(a.divisibility, std::min(kHuge, b.divisibility * scale));
        return r;
      }
      case OpKind::Sub: {
        if (is_float(out.elem)) break;
        AxisInfo a = arg(0), b = arg(1);
        r.contiguity = std::min(a.contiguity, b.constancy);
        r.constancy = std::min(a.constancy, b.constancy);
        r.divisibility = std::min(a.divisibility, b.divisibility);
        return r;
      }
      case OpKind::Mul:
      case OpKind::Shl: {
        if (is_float(out.elem)) break;
        AxisInfo a = arg(0), b = arg(1);
        r.constancy = std::min(a.constancy, b.constancy);
        int64_t rhs = every(op.operands[1]);
        if (op.kind == OpKind::Shl) rhs = 1;  // the shift amount's value is not known here
        r.divisibility = std::min(kHuge, every(op.operands[0]) * rhs);
        return r;
      }
      case OpKind::CmpLt: case OpKind::CmpLe: case OpKind::CmpGt: case OpKind::CmpGe: {
        AxisInfo a = arg(0), b = arg(1);
        r.constancy = std::min(a.constancy, b.constancy);
        // x + i < n over an aligned group of g: no boundary inside when x and n are multiples of g.
        auto split = [](const AxisInfo &x, const AxisInfo &n) {
          return n.constancy > 1 ? std::min({x.contiguity, x.divisibility, n.divisibility, n.constancy}) : int64_t(1);
        };
        r.constancy = std::max({r.constancy, split(a, b), split(b, a)});
        return r;
      }
      case OpKind::CmpEq: case OpKind::CmpNe: case OpKind::And: case OpKind::Or: case OpKind::Xor:
      case OpKind::Select: case OpKind::Not: case OpKind::Neg: case OpKind::Cast: {
        r.constancy = kHuge;
        for (ir::ValueId v : op.operands) r.constancy = std::min(r.constancy, of(v).constancy);
        if (op.kind == OpKind::Cast && !is_float(out.elem)) return arg(0);
        return r;
      }
      case OpKind::PtrCast: {
        // Same addresses: runs of consecutive elements stay runs only when the sizes match.
        AxisInfo a = arg(0);
        if (dtype_bytes(fn_.type(op.operands[0]).elem) == dtype_bytes(out.elem)) return a;
        int64_t aligned = a.contiguity > 1 ? 1 : a.divisibility;  // what every element's address is known to be
        return {1, a.constancy, std::max<int64_t>(aligned, dtype_bytes(out.elem))};
      }
      default:
        break;
    }
    if (out.is_ptr) r.divisibility = dtype_bytes(out.elem);
    return r;
  }

  const ir::Function &fn_;
  std::vector<AxisInfo> info_;
};

}  // namespace

std::vector<AxisInfo> analyze_axis_info(const ir::Function &fn) { return Analysis(fn).run(); }

}  // namespace kdsl::codegen::gpu
