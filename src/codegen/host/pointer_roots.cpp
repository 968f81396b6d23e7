// pointer_roots.cpp - provenance of pointer values: a fixed point over ops and region-carried values
#include "codegen/host/pointer_roots.h"

#include <algorithm>

namespace kdsl::codegen {
namespace {

class RootSolver {
 public:
  explicit RootSolver(const ir::Function &fn) : fn_(fn), roots_(fn.values.size()) {
    for (size_t i = 0; i < fn.args.size(); ++i)
      if (fn.type(fn.args[i].value).is_ptr) roots_[size_t(fn.args[i].value)].push_back(int(i));
  }

  std::vector<std::vector<int>> solve() {
    // Each round can only add roots, and there are finitely many: it ends.
    do {
      changed_ = false;
      region(fn_.body);
    } while (changed_);
    return std::move(roots_);
  }

 private:
  void flow(ir::ValueId into, ir::ValueId from) {
    if (!fn_.type(into).is_ptr || !fn_.type(from).is_ptr) return;
    std::vector<int> &dst = roots_[size_t(into)];
    for (int r : roots_[size_t(from)]) {
      auto at = std::lower_bound(dst.begin(), dst.end(), r);
      if (at != dst.end() && *at == r) continue;
      dst.insert(at, r);
      changed_ = true;
    }
  }

  static const ir::Op *yield_of(const ir::Region &r) {
    return !r.ops.empty() && r.ops.back().kind == OpKind::Yield ? &r.ops.back() : nullptr;
  }

  void region(const ir::Region &r) {
    for (const ir::Op &op : r.ops) {
      if (op.kind == OpKind::For) {
        // (lo, hi, step, inits...): region args (iv, carried...); the yield feeds the carried args and results.
        const ir::Region &body = op.regions[0];
        for (size_t j = 0; j + 3 < op.operands.size(); ++j) flow(body.args[j + 1], op.operands[j + 3]);
        region(body);
        if (const ir::Op *yield = yield_of(body))
          for (size_t j = 0; j < yield->operands.size() && j + 1 < body.args.size(); ++j) flow(body.args[j + 1], yield->operands[j]);
        for (size_t j = 0; j < op.results.size() && j + 1 < body.args.size(); ++j) flow(op.results[j], body.args[j + 1]);
      } else if (op.kind == OpKind::If) {
        for (const ir::Region &branch : op.regions) {
          region(branch);
          if (const ir::Op *yield = yield_of(branch))
            for (size_t j = 0; j < op.results.size() && j < yield->operands.size(); ++j) flow(op.results[j], yield->operands[j]);
        }
      } else {
        for (ir::ValueId result : op.results)
          for (ir::ValueId operand : op.operands) flow(result, operand);
        for (const ir::Region &inner : op.regions) region(inner);
      }
    }
  }

  const ir::Function &fn_;
  std::vector<std::vector<int>> roots_;
  bool changed_ = false;
};

}  // namespace

std::vector<std::vector<int>> pointer_roots(const ir::Function &fn) { return RootSolver(fn).solve(); }

}  // namespace kdsl::codegen
