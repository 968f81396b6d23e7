// verifier.cpp - structural and type checks of the block IR
#include "ir/verifier.h"

#include <fmt/format.h>

#include <kdsl/error.h>

#include "ir/printer.h"

namespace kdsl::ir {
namespace {

class Verifier {
 public:
  explicit Verifier(const Function &fn) : fn_(fn), defined_(fn.values.size(), false) {}

  std::vector<std::string> run() {
    for (const Argument &a : fn_.args) define(a.value, "argument");
    region(fn_.body, nullptr);
    return std::move(problems_);
  }

 private:
  void problem(const Op &op, const std::string &what) { problems_.push_back(fmt::format("{}: {}", op_name(op.kind), what)); }

  bool valid_id(ValueId v) const { return v >= 0 && size_t(v) < fn_.values.size(); }

  void define(ValueId v, const char *what) {
    if (!valid_id(v)) {
      problems_.push_back(fmt::format("{} defines value {} outside the value table", what, v));
      return;
    }
    if (defined_[size_t(v)]) problems_.push_back(fmt::format("value %{} is defined twice", v));
    defined_[size_t(v)] = true;
    scope_.push_back(v);
  }

  const Type *operand(const Op &op, size_t i) {
    ValueId v = op.operands[i];
    if (!valid_id(v) || !defined_[size_t(v)]) {
      problem(op, fmt::format("operand {} (value {}) is used before its definition or outside its region", i, v));
      return nullptr;
    }
    return &fn_.type(v);
  }

  void region(const Region &r, const Op *parent) {
    size_t mark = scope_.size();
    for (ValueId a : r.args) define(a, "region argument");
    for (const Op &op : r.ops) check(op);
    if (parent && (r.ops.empty() || r.ops.back().kind != OpKind::Yield))
      problems_.push_back(fmt::format("{}: region does not end with yield", op_name(parent->kind)));
    // Values of an inner region go out of scope at its end.
    while (scope_.size() > mark) {
      defined_[size_t(scope_.back())] = false;
      scope_.pop_back();
    }
  }

  void check(const Op &op) {
    int expected = op_operand_count(op.kind);
    if (expected >= 0 && int(op.operands.size()) != expected) {
      problem(op, fmt::format("expects {} operands, has {}", expected, op.operands.size()));
      return;
    }
    std::vector<const Type *> in;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      const Type *t = operand(op, i);
      if (!t) return;
      in.push_back(t);
    }
    check_types(op, in);
    for (size_t i = 0; i < op.regions.size(); ++i) region(op.regions[i], &op);
    for (ValueId r : op.results) define(r, op_name(op.kind));
  }

  const Type &result(const Op &op, size_t i = 0) { return fn_.type(op.results.at(i)); }

  bool want_results(const Op &op, size_t n) {
    if (op.results.size() == n) return true;
    problem(op, fmt::format("expects {} results, has {}", n, op.results.size()));
    return false;
  }

  void check_types(const Op &op, const std::vector<const Type *> &in) {
    switch (op.kind) {
      case OpKind::Store:
        if (in.size() < 2 || in.size() > 3) return problem(op, "expects (ptrs, value[, mask])");
        if (!in[0]->is_ptr || in[1]->is_ptr || in[0]->elem != in[1]->elem || !(in[0]->shape == in[1]->shape))
          problem(op, fmt::format("pointer {} and value {} do not match", in[0]->str(), in[1]->str()));
        if (in.size() == 3 && (in[2]->elem != DType::Bool || !(in[2]->shape == in[0]->shape)))
          problem(op, fmt::format("mask {} must be i1 shaped like the pointers {}", in[2]->str(), in[0]->str()));
        return;
      case OpKind::TileStore: {
        if (in.size() != 7 && in.size() != 10) return problem(op, "expects 7 operands (10 for a 3-D tensor)");
        bool ok = in[0]->is_ptr && in[0]->is_scalar() && *in[6] == Type{in[0]->elem, false, in[6]->shape} && in[6]->shape.rank == 2;
        for (size_t i = 1; ok && i < in.size(); ++i) ok = i == 6 || *in[i] == Type{DType::I32, false, {}};
        if (!ok)
          problem(op, fmt::format("expects (ptr base, i32 rows, cols, row_stride, row, col) scalars, a 2-D tile of the pointee and for a 3-D tensor "
                                  "(i32 planes, plane_stride, plane), has {} and {}",
                                  in[0]->str(), in[6]->str()));
        want_results(op, 0);
        return;
      }
      case OpKind::Prefetch:
        if (!in[0]->is_ptr) problem(op, fmt::format("expects pointers, got {}", in[0]->str()));
        want_results(op, 0);
        return;
      case OpKind::DevicePrint:
        want_results(op, 0);
        return;
      case OpKind::DeviceAssert:
        if (in[0]->is_ptr || in[0]->elem != DType::Bool) problem(op, fmt::format("condition must be i1, got {}", in[0]->str()));
        want_results(op, 0);
        return;
      case OpKind::Yield:
      case OpKind::For:
      case OpKind::If:
        return check_control(op, in);
      default:
        break;
    }
    if (!want_results(op, 1)) return;
    const Type &out = result(op);
    if (is_elementwise(op.kind)) {
      for (const Type *t : in)
        if (!(t->shape == out.shape)) return problem(op, fmt::format("operand {} has a different shape than the result {}", t->str(), out.str()));
    }
    switch (op.kind) {
      case OpKind::Constant:
        if (out.is_ptr) problem(op, "constants cannot be pointers");
        if (!is_float(out.elem) && op.ints.size() != 1) problem(op, "integer constant needs one integer attribute");
        break;
      case OpKind::ProgramId:
      case OpKind::NumPrograms:
        if (op.ints.size() != 1 || op.ints[0] < 0 || op.ints[0] > 2) problem(op, "axis must be 0, 1 or 2");
        if (out != Type{DType::I32, false, {}}) problem(op, "result must be i32");
        break;
      case OpKind::Arange:
        if (op.ints.size() != 2 || out.shape.rank != 1 || out.shape[0] != op.ints[1] - op.ints[0] || out.elem != DType::I32)
          problem(op, fmt::format("range [{}] does not match result {}", fmt::join(op.ints, ", "), out.str()));
        break;
      case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Rem:
      case OpKind::Min: case OpKind::Max: case OpKind::And: case OpKind::Or: case OpKind::Xor:
      case OpKind::Shl: case OpKind::Shr:
        if (*in[0] != out || *in[1] != out) problem(op, fmt::format("operands {} and {} must both be {}", in[0]->str(), in[1]->str(), out.str()));
        if (out.is_ptr) problem(op, "arithmetic on pointers (use ptr_add)");
        break;
      case OpKind::Pow:
        if (*in[0] != out || *in[1] != out || out.is_ptr || !is_float(out.elem))
          problem(op, fmt::format("operands {} and {} must both be {}, a float type", in[0]->str(), in[1]->str(), out.str()));
        break;
      case OpKind::Erf: case OpKind::Floor: case OpKind::Ceil:
        if (*in[0] != out || out.is_ptr || !is_float(out.elem)) problem(op, fmt::format("needs a float operand of the result type, has {} -> {}", in[0]->str(), out.str()));
        break;
      case OpKind::PtrCast:
        if (!in[0]->is_ptr || !out.is_ptr) problem(op, fmt::format("casts pointers to pointers, has {} -> {}", in[0]->str(), out.str()));
        break;
      case OpKind::CmpLt: case OpKind::CmpLe: case OpKind::CmpGt: case OpKind::CmpGe: case OpKind::CmpEq: case OpKind::CmpNe:
        if (*in[0] != *in[1]) problem(op, fmt::format("compares {} with {}", in[0]->str(), in[1]->str()));
        if (out.elem != DType::Bool || out.is_ptr) problem(op, "result must be i1");
        break;
      case OpKind::PtrAdd:
        if (!in[0]->is_ptr || in[1]->is_ptr || is_float(in[1]->elem) || out != *in[0] || (in[0]->elem != out.elem))
          problem(op, fmt::format("needs (ptr, integer offsets), has ({}, {}) -> {}", in[0]->str(), in[1]->str(), out.str()));
        break;
      case OpKind::Cast: case OpKind::Bitcast:
        if (in[0]->is_ptr || out.is_ptr) problem(op, "cannot cast pointers");
        break;
      case OpKind::Select:
        if (in[0]->elem != DType::Bool || *in[1] != out || *in[2] != out) problem(op, "needs (i1 condition, a, b) with a and b of the result type");
        break;
      case OpKind::Load:
        if (in.size() != 1 && in.size() != 3) return problem(op, "expects (ptrs) or (ptrs, mask, other)");
        if (!in[0]->is_ptr || out != Type{in[0]->elem, false, in[0]->shape}) problem(op, fmt::format("loads {} from {}", out.str(), in[0]->str()));
        if (in.size() == 3 && (in[1]->elem != DType::Bool || !(in[1]->shape == out.shape) || *in[2] != out))
          problem(op, "mask must be i1 and other of the result type, both shaped like the pointers");
        break;
      case OpKind::TileLoad: {
        if (in.size() != 6 && in.size() != 9) return problem(op, "expects 6 operands (9 for a 3-D tensor)");
        bool ok = in[0]->is_ptr && in[0]->is_scalar() && out == Type{in[0]->elem, false, out.shape} && out.shape.rank == 2;
        for (size_t i = 1; ok && i < in.size(); ++i) ok = *in[i] == Type{DType::I32, false, {}};
        if (!ok)
          problem(op, fmt::format("expects (ptr base, i32 rows, cols, row_stride, row, col[, planes, plane_stride, plane]) scalars and a 2-D tile of "
                                  "the pointee, has {} -> {}",
                                  in[0]->str(), out.str()));
        break;
      }
      case OpKind::AtomicAdd: case OpKind::AtomicMax: case OpKind::AtomicMin: case OpKind::AtomicXchg: case OpKind::AtomicCas: {
        size_t values = op.kind == OpKind::AtomicCas ? 2 : 1;  // cas: compare, value
        bool ok = (in.size() == values + 1 || in.size() == values + 2) && in[0]->is_ptr && out.elem == in[0]->elem && out.shape == in[0]->shape;
        for (size_t i = 1; ok && i <= values; ++i) ok = *in[i] == out;
        if (ok && in.size() == values + 2) ok = in.back()->elem == DType::Bool && !in.back()->is_ptr && in.back()->shape == out.shape;
        if (!ok) problem(op, op.kind == OpKind::AtomicCas ? "needs (ptrs, compare, values[, mask]) of the pointee type" : "needs (ptrs, values[, mask]) of the pointee type");
        break;
      }
      case OpKind::ScanSum: case OpKind::ScanMax: case OpKind::ScanMin:
        if (op.ints.size() != 2 || op.ints[0] < 0 || op.ints[0] >= in[0]->shape.rank || (op.ints[1] != 0 && op.ints[1] != 1) || *in[0] != out ||
            out.is_ptr || out.elem == DType::Bool)
          problem(op, fmt::format("[axis, reverse] = [{}] does not scan {} to {}", fmt::join(op.ints, ","), in[0]->str(), out.str()));
        break;
      case OpKind::Gather: {
        const Shape &src = in[0]->shape, &index = in[1]->shape;
        bool ok = op.ints.size() == 1 && op.ints[0] >= 0 && op.ints[0] < src.rank && index.rank == src.rank && !in[0]->is_ptr && !in[1]->is_ptr &&
                  !is_float(in[1]->elem) && in[1]->elem != DType::Bool && out == Type{in[0]->elem, false, index};
        for (int d = 0; ok && d < src.rank; ++d) ok = d == op.ints[0] || src[d] == index[d];
        if (!ok) problem(op, fmt::format("axis [{}] does not gather {} at {} into {}", fmt::join(op.ints, ","), in[0]->str(), in[1]->str(), out.str()));
        break;
      }
      case OpKind::Broadcast: {
        const Shape &s = in[0]->shape;
        bool ok = s.rank == out.shape.rank;
        for (int i = 0; ok && i < s.rank; ++i) ok = s[i] == out.shape[i] || s[i] == 1;
        if (!ok || in[0]->elem != out.elem || in[0]->is_ptr != out.is_ptr) problem(op, fmt::format("cannot broadcast {} to {}", in[0]->str(), out.str()));
        break;
      }
      case OpKind::ExpandDims: {
        bool ok = op.ints.size() == 1 && out.shape.rank == in[0]->shape.rank + 1 && op.ints[0] >= 0 && op.ints[0] <= in[0]->shape.rank;
        if (ok) ok = out.shape[int(op.ints[0])] == 1 && out.shape.numel() == in[0]->shape.numel();
        if (!ok) problem(op, fmt::format("cannot expand {} to {}", in[0]->str(), out.str()));
        break;
      }
      case OpKind::Reshape:
        if (in[0]->shape.numel() != out.shape.numel()) problem(op, fmt::format("cannot reshape {} to {}", in[0]->str(), out.str()));
        break;
      case OpKind::Trans: {
        bool ok = int(op.ints.size()) == out.shape.rank && in[0]->shape.rank == out.shape.rank;
        for (size_t i = 0; ok && i < op.ints.size(); ++i) ok = op.ints[i] >= 0 && op.ints[i] < out.shape.rank && out.shape[int(i)] == in[0]->shape[int(op.ints[i])];
        if (!ok) problem(op, fmt::format("permutation [{}] does not take {} to {}", fmt::join(op.ints, ","), in[0]->str(), out.str()));
        break;
      }
      case OpKind::ReduceSum: case OpKind::ReduceMax: case OpKind::ReduceMin: case OpKind::ArgMax: case OpKind::ArgMin: {
        bool ok = op.ints.size() == 1 && op.ints[0] >= 0 && op.ints[0] < in[0]->shape.rank && out.shape.rank == in[0]->shape.rank - 1;
        for (int i = 0, j = 0; ok && i < in[0]->shape.rank; ++i)
          if (i != op.ints[0]) ok = out.shape[j++] == in[0]->shape[i];
        if (!ok) problem(op, fmt::format("axis [{}] does not reduce {} to {}", fmt::join(op.ints, ","), in[0]->str(), out.str()));
        break;
      }
      case OpKind::Dot: {
        const Shape &a = in[0]->shape, &b = in[1]->shape;
        bool ok = a.rank == 2 && b.rank == 2 && a[1] == b[0] && *in[2] == out && out.shape.rank == 2 && out.shape[0] == a[0] &&
                  out.shape[1] == b[1] && in[0]->elem == in[1]->elem;
        if (!ok) problem(op, fmt::format("cannot multiply {} by {} into {}", in[0]->str(), in[1]->str(), out.str()));
        // ints: empty (IEEE) or {kDotTf32} (ir.h), for f32 inputs only.
        if (!op.ints.empty() && (!is_tf32_dot(op) || in[0]->elem != DType::F32))
          problem(op, fmt::format("precision [{}] of a dot of {} (TF32, [1], is for f32 inputs)", fmt::join(op.ints, ","), in[0]->str()));
        break;
      }
      case OpKind::ScaledDot: {
        const Shape &a = in[0]->shape, &b = in[1]->shape;
        auto byte = [](const Type *t) { return !t->is_ptr && (t->elem == DType::I8 || t->elem == DType::U8); };
        bool ok = a.rank == 2 && b.rank == 2 && a[1] == b[0] && byte(in[0]) && in[1]->elem == in[0]->elem && !in[1]->is_ptr && *in[2] == out &&
                  out.elem == DType::I32 && !out.is_ptr && out.shape.rank == 2 && out.shape[0] == a[0] && out.shape[1] == b[1] &&
                  in[3]->elem == DType::I32 && !in[3]->is_ptr && in[3]->shape == Shape{1, b[1]};
        if (!ok) problem(op, fmt::format("cannot multiply {} by {} into {} scaled by {}", in[0]->str(), in[1]->str(), out.str(), in[3]->str()));
        break;
      }
      case OpKind::Dot4: {
        const Shape &a = in[0]->shape;
        auto byte = [](const Type *t) { return !t->is_ptr && (t->elem == DType::I8 || t->elem == DType::U8); };
        bool ok = a.rank >= 1 && a[a.rank - 1] % 4 == 0 && in[1]->shape == a && byte(in[0]) && byte(in[1]) && *in[2] == out &&
                  out.elem == DType::I32 && !out.is_ptr && out.shape.rank == a.rank;
        for (int i = 0; ok && i < a.rank; ++i) ok = out.shape[i] == (i + 1 == a.rank ? a[i] / 4 : a[i]);
        if (!ok) problem(op, fmt::format("cannot take dot products of 4 of {} and {} into {}", in[0]->str(), in[1]->str(), out.str()));
        break;
      }
      default:
        break;
    }
  }

  void check_control(const Op &op, const std::vector<const Type *> &in) {
    if (op.kind == OpKind::Yield) return;  // checked against the parent below
    if (op.kind == OpKind::For) {
      if (in.size() < 3) return problem(op, "expects (lo, hi, step, inits...)");
      for (int i = 0; i < 3; ++i)
        if (*in[size_t(i)] != Type{DType::I32, false, {}}) problem(op, "lo, hi and step must be i32 scalars");
      if (op.regions.size() != 1) return problem(op, "needs one region");
      const Region &body = op.regions[0];
      size_t carried = in.size() - 3;
      if (body.args.size() != carried + 1) return problem(op, "region needs (iv, carried...) arguments");
      if (op.results.size() != carried) return problem(op, "needs one result per carried value");
      for (size_t i = 0; i < carried; ++i)
        if (fn_.type(body.args[i + 1]) != *in[i + 3] || fn_.type(op.results[i]) != *in[i + 3])
          problem(op, fmt::format("carried value {} changes type", i));
      check_yield(op, body, op.results);
      return;
    }
    // If
    if (*in[0] != Type{DType::Bool, false, {}}) problem(op, "condition must be an i1 scalar");
    if (op.regions.size() != 2) return problem(op, "needs then and else regions");
    check_yield(op, op.regions[0], op.results);
    check_yield(op, op.regions[1], op.results);
  }

  void check_yield(const Op &op, const Region &r, const std::vector<ValueId> &results) {
    if (r.ops.empty() || r.ops.back().kind != OpKind::Yield) return;
    const Op &y = r.ops.back();
    if (y.operands.size() != results.size()) return problem(op, fmt::format("yields {} values for {} results", y.operands.size(), results.size()));
    for (size_t i = 0; i < results.size(); ++i)
      if (valid_id(y.operands[i]) && fn_.type(y.operands[i]) != fn_.type(results[i]))
        problem(op, fmt::format("yield {} is {}, result is {}", i, fn_.type(y.operands[i]).str(), fn_.type(results[i]).str()));
  }

  const Function &fn_;
  std::vector<bool> defined_;
  std::vector<ValueId> scope_;
  std::vector<std::string> problems_;
};

}  // namespace

std::vector<std::string> verify(const Function &fn) { return Verifier(fn).run(); }

void verify_or_throw(const Function &fn) {
  auto problems = verify(fn);
  if (problems.empty()) return;
  internal_error(fmt::format("invalid IR for kernel '{}':\n  {}\n{}", fn.name, fmt::join(problems, "\n  "), print(fn)));
}

}  // namespace kdsl::ir
