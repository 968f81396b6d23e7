// extent_requirements.cpp - expect_extent's size expressions: extracted from the traced IR, evaluated per launch
#include "runtime/extent_requirements.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include <kdsl/error.h>

namespace kdsl::detail {
namespace {

const char *operator_text(OpKind k) {
  switch (k) {
    case OpKind::Add: return "+";
    case OpKind::Sub: return "-";
    case OpKind::Mul: return "*";
    case OpKind::Div: return "/";
    case OpKind::Rem: return "%";
    case OpKind::Shl: return "<<";
    case OpKind::Shr: return ">>";
    default: return nullptr;  // min, max: written as calls
  }
}

class Extractor {
 public:
  explicit Extractor(const ir::Function &fn) : fn_(fn) {
    ir::walk(fn.body, [&](const ir::Op &op) {
      for (ir::ValueId r : op.results) defs_[r] = &op;
    });
    for (size_t i = 0; i < fn.args.size(); ++i) arg_of_[fn.args[i].value] = int(i);
  }

  ExtentRequirement build(int32_t pointer, int32_t count) {
    ExtentRequirement r;
    auto arg = arg_of_.find(pointer);
    if (arg == arg_of_.end())
      throw Error(fmt::format("kernel '{}': expect_extent(x, n) needs x to be a pointer argument of the kernel, not a pointer computed from one", fn_.name));
    r.arg = arg->second;
    std::string text;
    node(r, count, text);
    // The outermost operator needs no parentheses.
    if (r.nodes.back().kind == ExtentRequirement::Node::Kind::Binary && text.front() == '(') text = text.substr(1, text.size() - 2);
    r.text = text;
    return r;
  }

 private:
  [[noreturn]] void refuse(const std::string &what) const {
    throw Error(fmt::format("kernel '{}': expect_extent(x, n): n must be computed from Scalar integer arguments and integer constants with "
                            "+ - * / % << >> min max and casts; it depends on {}",
                            fn_.name, what));
  }

  // Appends the nodes computing `v`; returns its index and its text.
  int node(ExtentRequirement &r, ir::ValueId v, std::string &text) {
    using Kind = ExtentRequirement::Node::Kind;
    const ir::Type &t = fn_.type(v);
    if (t.is_ptr || !is_integer(t.elem) || t.shape.rank != 0) refuse(fmt::format("a value of type {}", t.str()));
    ExtentRequirement::Node n;
    if (auto arg = arg_of_.find(v); arg != arg_of_.end()) {
      n.kind = Kind::Argument;
      n.value = arg->second;
      text = fmt::format("argument {}", arg->second);
    } else {
      auto def = defs_.find(v);
      if (def == defs_.end()) refuse("a value carried by a loop or branch");
      const ir::Op &op = *def->second;
      std::string a, b;
      switch (op.kind) {
        case OpKind::Constant:
          n.value = op.ints.empty() ? 0 : op.ints[0];
          text = fmt::format("{}", n.value);
          break;
        case OpKind::Cast:
        case OpKind::Neg:
          if (!is_integer(fn_.type(op.operands[0]).elem)) refuse(fmt::format("a {} of a floating-point value", ir::op_name(op.kind)));
          n.kind = Kind::Unary;
          n.op = op.kind;
          n.a = node(r, op.operands[0], a);
          text = op.kind == OpKind::Neg ? "-" + a : a;
          break;
        case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Div: case OpKind::Rem:
        case OpKind::Shl: case OpKind::Shr: case OpKind::Min: case OpKind::Max:
          n.kind = Kind::Binary;
          n.op = op.kind;
          n.a = node(r, op.operands[0], a);
          n.b = node(r, op.operands[1], b);
          if (const char *sym = operator_text(op.kind)) text = fmt::format("({} {} {})", a, sym, b);
          else text = fmt::format("{}({}, {})", op.kind == OpKind::Min ? "min" : "max", a, b);
          break;
        default: refuse(fmt::format("an op '{}'", ir::op_name(op.kind)));
      }
    }
    r.nodes.push_back(n);
    return int(r.nodes.size() - 1);
  }

  const ir::Function &fn_;
  std::unordered_map<ir::ValueId, const ir::Op *> defs_;
  std::unordered_map<ir::ValueId, int> arg_of_;
};

}  // namespace

std::vector<ExtentRequirement> build_extent_requirements(const ir::Function &traced, const std::vector<std::pair<int32_t, int32_t>> &pairs) {
  std::vector<ExtentRequirement> out;
  if (pairs.empty()) return out;
  Extractor x(traced);
  for (auto [pointer, count] : pairs) out.push_back(x.build(pointer, count));
  return out;
}

int64_t evaluate(const ExtentRequirement &r, const uint64_t *slots, const std::string &kernel) {
  using Kind = ExtentRequirement::Node::Kind;
  std::vector<int64_t> v(r.nodes.size());
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const ExtentRequirement::Node &n = r.nodes[i];
    switch (n.kind) {
      case Kind::Argument: v[i] = int64_t(slots[n.value]); break;
      case Kind::Constant: v[i] = n.value; break;
      case Kind::Unary: v[i] = n.op == OpKind::Neg ? -v[size_t(n.a)] : v[size_t(n.a)]; break;
      case Kind::Binary: {
        int64_t a = v[size_t(n.a)], b = v[size_t(n.b)];
        if ((n.op == OpKind::Div || n.op == OpKind::Rem) && b == 0)
          throw Error(fmt::format("kernel '{}': expect_extent(argument {}, {}) divides by zero for these arguments", kernel, r.arg, r.text));
        switch (n.op) {
          case OpKind::Add: v[i] = a + b; break;
          case OpKind::Sub: v[i] = a - b; break;
          case OpKind::Mul: v[i] = a * b; break;
          case OpKind::Div: v[i] = a / b; break;
          case OpKind::Rem: v[i] = a % b; break;
          case OpKind::Shl: v[i] = int64_t(uint64_t(a) << (b & 63)); break;
          case OpKind::Shr: v[i] = a >> (b & 63); break;
          case OpKind::Min: v[i] = std::min(a, b); break;
          default: v[i] = std::max(a, b); break;
        }
        break;
      }
    }
  }
  return v.back();
}

}  // namespace kdsl::detail
