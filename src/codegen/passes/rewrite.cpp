// rewrite.cpp - use counts and replace-all-uses for the IR passes
#include "codegen/passes/rewrite.h"

namespace kdsl::passes {

std::vector<int> count_uses(const ir::Function &fn) {
  std::vector<int> uses(fn.values.size(), 0);
  ir::walk(fn.body, [&](const ir::Op &op) {
    for (ir::ValueId v : op.operands) ++uses[size_t(v)];
  });
  return uses;
}

ir::ValueId resolve(const std::unordered_map<ir::ValueId, ir::ValueId> &replacement, ir::ValueId v) {
  for (auto it = replacement.find(v); it != replacement.end(); it = replacement.find(v)) v = it->second;
  return v;
}

void replace_uses(ir::Function &fn, const std::unordered_map<ir::ValueId, ir::ValueId> &replacement) {
  if (replacement.empty()) return;
  ir::walk(fn.body, [&](ir::Op &op) {
    for (ir::ValueId &v : op.operands) v = resolve(replacement, v);
  });
}

}  // namespace kdsl::passes
