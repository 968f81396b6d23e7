// cse.cpp - scoped hash-consing of pure ops, and views that change nothing replaced by their operand
#include "codegen/passes/cse.h"

#include <bit>
#include <map>
#include <tuple>
#include <unordered_map>

#include "codegen/passes/rewrite.h"

namespace kdsl::passes {
namespace {
using namespace ir;  // op traits: is_view, is_elementwise, has_effect, has_regions

using Key = std::tuple<OpKind, std::vector<ir::ValueId>, std::vector<int64_t>, uint64_t, std::string>;

class Cse {
 public:
  explicit Cse(ir::Function &fn) : fn_(fn) {}

  void run() {
    region(fn_.body);
    replace_uses(fn_, replacement_);
  }

 private:
  ir::ValueId resolve(ir::ValueId v) const { return passes::resolve(replacement_, v); }

  void region(ir::Region &r) {
    scopes_.emplace_back();
    for (ir::Op &op : r.ops) {
      for (ir::ValueId &v : op.operands) v = resolve(v);
      for (ir::Region &inner : op.regions) region(inner);
      if (has_effect(op.kind) || has_regions(op.kind) || op.results.size() != 1) continue;
      // A reshape or broadcast to its operand's own shape is the operand: kept, a transposed
      // read through it re-derived each index by division (matmul_kquant's reshape of a
      // [BN, 32] part to [BN, 32] before trans).
      if ((op.kind == OpKind::Reshape || op.kind == OpKind::Broadcast) && fn_.type(op.results[0]) == fn_.type(op.operands[0])) {
        replacement_[op.results[0]] = op.operands[0];
        continue;
      }
      Key key{op.kind, op.operands, op.ints, std::bit_cast<uint64_t>(op.fval), fn_.type(op.results[0]).str()};
      if (ir::ValueId prior = lookup(key); prior != ir::kNoValue) {
        replacement_[op.results[0]] = prior;
      } else {
        scopes_.back()[key] = op.results[0];
      }
    }
    scopes_.pop_back();
  }

  ir::ValueId lookup(const Key &key) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto found = it->find(key); found != it->end()) return found->second;
    return ir::kNoValue;
  }

  ir::Function &fn_;
  std::vector<std::map<Key, ir::ValueId>> scopes_;
  std::unordered_map<ir::ValueId, ir::ValueId> replacement_;
};

}  // namespace

void cse(ir::Function &fn) { Cse(fn).run(); }

}  // namespace kdsl::passes
