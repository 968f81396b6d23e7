// scaled_dot.cpp - finds acc + dot(a, b) * broadcast(row) on bytes and makes it one scaled_dot
#include "codegen/host/scaled_dot.h"

#include <optional>
#include <unordered_map>

#include "codegen/passes/dce.h"
#include "codegen/passes/rewrite.h"

namespace kdsl::codegen {
namespace {
using ir::Op;
using ir::ValueId;

class Fuser {
 public:
  explicit Fuser(ir::Function &fn) : fn_(fn), uses_(passes::count_uses(fn)) {
    ir::walk(fn.body, [&](const Op &op) {
      for (ValueId v : op.results) all_defs_[v] = &op;
    });
  }

  // Rewrites the ops of `kind` (Add: acc + dot * scale; Mul: a product with no sum, such as
  // the first sub-block's, where adding to zeros folded away) in r and its inner regions.
  bool run(ir::Region &r, OpKind kind) {
    bool fused = false;
    std::unordered_map<ValueId, Op *> defs;  // this region's ops by result
    for (Op &op : r.ops) {
      for (ir::Region &inner : op.regions) fused |= run(inner, kind);
      if (op.kind == kind) fused |= kind == OpKind::Add ? fuse_sum(op, defs) : fuse_product(op, defs);
      for (ValueId v : op.results) defs[v] = &op;
    }
    return fused;
  }

 private:
  struct Product {
    ValueId a, b, zeros, scale;
  };

  // mul(dot(a, b, 0), broadcast(scale)), operands in either order: the dot of bytes in the
  // product's region (so the fused op runs as often as the dot did), the zeros and the scale,
  // an i32 row, anywhere above.
  std::optional<Product> match_product(const Op &mul, const std::unordered_map<ValueId, Op *> &defs) const {
    const ir::Type &t = fn_.type(mul.results[0]);
    if (mul.kind != OpKind::Mul || t.elem != DType::I32 || t.is_ptr || t.shape.rank != 2) return std::nullopt;
    for (int side = 0; side < 2; ++side) {
      const Op *dot = single_use_def(mul.operands[size_t(side)], defs);
      const Op *spread = def_anywhere(mul.operands[size_t(1 - side)]);
      if (!dot || dot->kind != OpKind::Dot || !dot->ints.empty() || !spread || spread->kind != OpKind::Broadcast) continue;
      const ir::Type &a = fn_.type(dot->operands[0]), &row = fn_.type(spread->operands[0]);
      const bool bytes = !a.is_ptr && (a.elem == DType::I8 || a.elem == DType::U8);
      if (!bytes || !is_zero(dot->operands[2]) || row.elem != DType::I32 || row.is_ptr || row.shape != ir::Shape{1, t.shape[1]}) continue;
      return Product{dot->operands[0], dot->operands[1], dot->operands[2], spread->operands[0]};
    }
    return std::nullopt;
  }

  // add(acc, product), either order, the product used by the add alone and in its region.
  bool fuse_sum(Op &add, const std::unordered_map<ValueId, Op *> &defs) {
    for (int side = 0; side < 2; ++side) {
      const Op *mul = single_use_def(add.operands[size_t(1 - side)], defs);
      const std::optional<Product> p = mul ? match_product(*mul, defs) : std::nullopt;
      if (!p) continue;
      add.kind = OpKind::ScaledDot;  // same result; the dot and the product go with dce
      add.operands = {p->a, p->b, add.operands[size_t(side)], p->scale};
      return true;
    }
    return false;
  }

  bool fuse_product(Op &mul, const std::unordered_map<ValueId, Op *> &defs) {
    const std::optional<Product> p = match_product(mul, defs);
    if (!p) return false;
    mul.kind = OpKind::ScaledDot;  // onto the dot's zeros
    mul.operands = {p->a, p->b, p->zeros, p->scale};
    return true;
  }

  const Op *def_in(ValueId v, const std::unordered_map<ValueId, Op *> &defs) const {
    auto it = defs.find(v);
    return it == defs.end() ? nullptr : it->second;
  }
  const Op *single_use_def(ValueId v, const std::unordered_map<ValueId, Op *> &defs) const {
    return uses_[size_t(v)] == 1 ? def_in(v, defs) : nullptr;
  }
  const Op *def_anywhere(ValueId v) const {
    auto it = all_defs_.find(v);
    return it == all_defs_.end() ? nullptr : it->second;
  }
  bool is_zero(ValueId v) const {
    const Op *c = def_anywhere(v);
    return c && c->kind == OpKind::Constant && (c->ints.empty() || c->ints[0] == 0) && c->fval == 0;
  }

  ir::Function &fn_;
  std::vector<int> uses_;
  std::unordered_map<ValueId, const Op *> all_defs_;
};

}  // namespace

void fuse_scaled_dots(ir::Function &fn) {
  // Sums first, so that a product someone adds to is fused with the add; then the use counts
  // again, for the products left.
  if (Fuser(fn).run(fn.body, OpKind::Add)) passes::dce(fn);
  if (Fuser(fn).run(fn.body, OpKind::Mul)) passes::dce(fn);
}

}  // namespace kdsl::codegen
