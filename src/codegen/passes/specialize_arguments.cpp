// specialize_arguments.cpp - integer arguments known to equal 1 become constants
#include "codegen/passes/specialize_arguments.h"

#include <unordered_map>

#include "codegen/passes/rewrite.h"

namespace kdsl::passes {

void specialize_arguments(ir::Function &fn) {
  std::unordered_map<ir::ValueId, ir::ValueId> replacement;
  std::vector<ir::Op> constants;
  for (const ir::Argument &a : fn.args) {
    const ir::Type &t = fn.type(a.value);
    if (a.spec != ir::ArgClass::EqualToOne || t.is_ptr || is_float(t.elem)) continue;
    ir::Op c;
    c.kind = OpKind::Constant;
    c.ints = {1};
    c.results = {fn.new_value(t)};
    replacement[a.value] = c.results[0];
    constants.push_back(std::move(c));
  }
  replace_uses(fn, replacement);
  fn.body.ops.insert(fn.body.ops.begin(), constants.begin(), constants.end());
}

}  // namespace kdsl::passes
