// fold_constants.cpp - constant folding and algebraic simplification on splat constants
#include "codegen/passes/fold_constants.h"

#include <cmath>
#include <optional>
#include <unordered_map>

#include <kdsl/formats/fp8.h>
#include <kdsl/half.h>

#include "codegen/passes/rewrite.h"

namespace kdsl::passes {
namespace {
using namespace ir;  // op traits: is_view, is_elementwise, has_effect, has_regions

struct ConstValue {
  bool is_float = false;
  int64_t i = 0;
  double f = 0;
};

// Wraps an integer to the dtype's width and signedness.
int64_t wrap(DType t, int64_t v) {
  switch (t) {
    case DType::Bool: return v != 0;
    case DType::I8: return int8_t(v);
    case DType::U8: return uint8_t(v);
    case DType::I16: return int16_t(v);
    case DType::I32: return int32_t(v);
    case DType::U32: return uint32_t(v);
    default: return v;
  }
}

double round_float(DType t, double v) {
  switch (t) {
    case DType::F32: return double(float(v));
    case DType::F16: return double(f16_bits_to_f32(f32_to_f16_bits(float(v))));
    case DType::BF16: return double(bf16_bits_to_f32(f32_to_bf16_bits(float(v))));
    case DType::F8E4M3: return double(e4m3_bits_to_f32(f32_to_e4m3_bits(float(v))));
    default: return v;
  }
}

class Folder {
 public:
  explicit Folder(ir::Function &fn) : fn_(fn) {}

  void run() {
    region(fn_.body);
    replace_uses(fn_, replacement_);
  }

 private:
  ir::ValueId resolve(ir::ValueId v) const { return passes::resolve(replacement_, v); }
  std::optional<ConstValue> constant_of(ir::ValueId v) const {
    auto it = constants_.find(v);
    if (it == constants_.end()) return std::nullopt;
    return it->second;
  }
  bool is_constant(ir::ValueId v, double value) const {
    auto c = constant_of(v);
    return c && (c->is_float ? c->f == value : double(c->i) == value);
  }

  void region(ir::Region &r) {
    for (ir::Op &op : r.ops) {
      for (ir::ValueId &v : op.operands) v = resolve(v);
      for (ir::Region &inner : op.regions) region(inner);
      if (op.kind == OpKind::Constant) {
        const ir::Type &t = fn_.type(op.results[0]);
        // A float constant holds a value of its dtype (hand-written IR may say 0.1 : f16).
        if (is_float(t.elem)) op.fval = round_float(t.elem, op.fval);
        constants_[op.results[0]] = is_float(t.elem) ? ConstValue{true, 0, op.fval} : ConstValue{false, op.ints.at(0), 0};
        continue;
      }
      if (op.results.size() != 1) continue;
      if (auto folded = fold(op)) {
        // Turn the op itself into the constant: it keeps its result and type.
        const ir::Type &t = fn_.type(op.results[0]);
        op.kind = OpKind::Constant;
        op.operands.clear();
        op.regions.clear();
        op.ints = is_float(t.elem) ? std::vector<int64_t>{} : std::vector<int64_t>{folded->i};
        op.fval = is_float(t.elem) ? folded->f : 0;
        constants_[op.results[0]] = *folded;
        continue;
      }
      if (ir::ValueId same = simplify(op); same != ir::kNoValue) replacement_[op.results[0]] = same;
    }
  }

  std::optional<ConstValue> fold(const ir::Op &op) const {
    if (is_view(op.kind)) return constant_of(op.operands[0]);
    if (!is_elementwise(op.kind) || op.kind == OpKind::PtrAdd || op.kind == OpKind::PtrCast || op.kind == OpKind::Bitcast) return std::nullopt;
    std::vector<ConstValue> in;
    for (ir::ValueId v : op.operands) {
      auto c = constant_of(v);
      if (!c) return std::nullopt;
      in.push_back(*c);
    }
    const ir::Type &out = fn_.type(op.results[0]);
    const ir::Type &arg = fn_.type(op.operands[0]);
    if (op.kind == OpKind::Select) return in[0].i ? in[1] : in[2];
    if (op.kind == OpKind::Cast) {
      double as_float = in[0].is_float ? in[0].f : (is_unsigned(arg.elem) ? double(uint64_t(in[0].i)) : double(in[0].i));
      if (is_float(out.elem)) return ConstValue{true, 0, round_float(out.elem, as_float)};
      if (out.elem == DType::Bool) return ConstValue{false, as_float != 0, 0};
      if (in[0].is_float) {
        if (!std::isfinite(as_float)) return std::nullopt;  // undefined in the target; leave it
        return ConstValue{false, wrap(out.elem, int64_t(as_float)), 0};
      }
      return ConstValue{false, wrap(out.elem, in[0].i), 0};
    }
    if (is_float(arg.elem)) return fold_float(op.kind, in, out.elem);
    return fold_int(op.kind, in, arg.elem, out.elem);
  }

  static std::optional<ConstValue> fold_float(OpKind k, const std::vector<ConstValue> &in, DType out) {
    double a = in[0].f, b = in.size() > 1 ? in[1].f : 0;
    auto f = [&](double v) { return ConstValue{true, 0, round_float(out, v)}; };
    auto cmp = [](bool v) { return ConstValue{false, v, 0}; };
    switch (k) {
      case OpKind::Add: return f(a + b);
      case OpKind::Sub: return f(a - b);
      case OpKind::Mul: return f(a * b);
      case OpKind::Div: return f(a / b);
      case OpKind::Min: return f(a < b ? a : b);
      case OpKind::Max: return f(a > b ? a : b);
      case OpKind::Neg: return f(-a);
      case OpKind::Abs: return f(std::fabs(a));
      case OpKind::Sqrt: return f(std::sqrt(a));
      case OpKind::Floor: return f(std::floor(a));
      case OpKind::Ceil: return f(std::ceil(a));
      case OpKind::CmpLt: return cmp(a < b);
      case OpKind::CmpLe: return cmp(a <= b);
      case OpKind::CmpGt: return cmp(a > b);
      case OpKind::CmpGe: return cmp(a >= b);
      case OpKind::CmpEq: return cmp(a == b);
      case OpKind::CmpNe: return cmp(a != b);
      default: return std::nullopt;  // transcendental functions keep the target's rounding
    }
  }

  static std::optional<ConstValue> fold_int(OpKind k, const std::vector<ConstValue> &in, DType t, DType out) {
    bool u = is_unsigned(t);
    int64_t a = in[0].i, b = in.size() > 1 ? in[1].i : 0;
    uint64_t ua = uint64_t(a), ub = uint64_t(b);
    auto i = [&](int64_t v) { return ConstValue{false, wrap(out, v), 0}; };
    auto cmp = [](bool v) { return ConstValue{false, v, 0}; };
    switch (k) {
      case OpKind::Add: return i(int64_t(ua + ub));
      case OpKind::Sub: return i(int64_t(ua - ub));
      case OpKind::Mul: return i(int64_t(ua * ub));
      case OpKind::Div: if (b == 0) return std::nullopt; return i(u ? int64_t(ua / ub) : a / b);
      case OpKind::Rem: if (b == 0) return std::nullopt; return i(u ? int64_t(ua % ub) : a % b);
      case OpKind::Min: return i(u ? int64_t(ua < ub ? ua : ub) : (a < b ? a : b));
      case OpKind::Max: return i(u ? int64_t(ua > ub ? ua : ub) : (a > b ? a : b));
      case OpKind::And: return i(a & b);
      case OpKind::Or: return i(a | b);
      case OpKind::Xor: return i(a ^ b);
      case OpKind::Shl: if (b < 0 || b >= dtype_bytes(t) * 8) return std::nullopt; return i(int64_t(ua << b));
      case OpKind::Shr: if (b < 0 || b >= dtype_bytes(t) * 8) return std::nullopt; return i(u ? int64_t(ua >> b) : a >> b);
      case OpKind::Neg: return i(int64_t(0 - ua));
      case OpKind::Not: return t == DType::Bool ? cmp(!a) : i(~a);
      case OpKind::Abs: return i(a < 0 ? -a : a);
      case OpKind::CmpLt: return cmp(u ? ua < ub : a < b);
      case OpKind::CmpLe: return cmp(u ? ua <= ub : a <= b);
      case OpKind::CmpGt: return cmp(u ? ua > ub : a > b);
      case OpKind::CmpGe: return cmp(u ? ua >= ub : a >= b);
      case OpKind::CmpEq: return cmp(a == b);
      case OpKind::CmpNe: return cmp(a != b);
      default: return std::nullopt;
    }
  }

  // x + 0, x * 1, mask & true, ...: the op's result is one of its operands.
  ir::ValueId simplify(const ir::Op &op) const {
    if (op.operands.size() < 2) return ir::kNoValue;
    ir::ValueId a = op.operands[0], b = op.operands[1];
    bool is_int = !is_float(fn_.type(a).elem) && !fn_.type(a).is_ptr;
    switch (op.kind) {
      case OpKind::Add:
        if (is_int && is_constant(b, 0)) return a;
        if (is_int && is_constant(a, 0)) return b;
        break;
      case OpKind::Sub:
        if (is_int && is_constant(b, 0)) return a;
        break;
      case OpKind::Mul:
        if (is_constant(b, 1)) return a;
        if (is_constant(a, 1)) return b;
        break;
      case OpKind::Div:
        if (is_constant(b, 1)) return a;
        break;
      case OpKind::PtrAdd:
        if (is_constant(b, 0)) return a;
        break;
      case OpKind::And:
        if (fn_.type(a).elem == DType::Bool && is_constant(b, 1)) return a;
        if (fn_.type(a).elem == DType::Bool && is_constant(a, 1)) return b;
        break;
      case OpKind::Or:
        if (is_constant(b, 0)) return a;
        if (is_constant(a, 0)) return b;
        break;
      case OpKind::Select:
        if (auto c = constant_of(a)) return c->i ? op.operands[1] : op.operands[2];
        break;
      default:
        break;
    }
    return ir::kNoValue;
  }

  ir::Function &fn_;
  std::unordered_map<ir::ValueId, ConstValue> constants_;
  std::unordered_map<ir::ValueId, ir::ValueId> replacement_;
};

}  // namespace

void fold_constants(ir::Function &fn) { Folder(fn).run(); }

}  // namespace kdsl::passes
