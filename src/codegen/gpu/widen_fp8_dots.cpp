// widen_fp8_dots.cpp - casts to f16 in front of the f8e4m3 dots a layout plan left on FMAs, where the target has f16 tensor cores
#include "codegen/gpu/widen_fp8_dots.h"

#include <algorithm>
#include <functional>
#include <set>

namespace kdsl::codegen::gpu {
namespace {

bool has_f16_instruction(const TargetInfo &target) {
  return std::any_of(target.matrix_instructions.begin(), target.matrix_instructions.end(),
                     [&](const MatrixInstruction &mi) { return mi.a == DType::F16 && mi.b == DType::F16 && mi.acc == DType::F32; });
}

bool is_fp8_dot(const ir::Function &fn, const ir::Op &op) {
  return op.kind == OpKind::Dot && fn.type(op.operands[0]).elem == DType::F8E4M3 && fn.type(op.operands[1]).elem == DType::F8E4M3 &&
         fn.type(op.results[0]).elem == DType::F32;
}

// Casts in front of every fp8 dot for which `chosen` (given its result) is true.
void widen(ir::Function &fn, ir::Region &region, const std::function<bool(ir::ValueId)> &chosen) {
  for (size_t i = 0; i < region.ops.size(); ++i) {
    for (ir::Region &inner : region.ops[i].regions) widen(fn, inner, chosen);
    const ir::Op &dot = region.ops[i];
    if (!is_fp8_dot(fn, dot) || !chosen(dot.results[0])) continue;
    std::vector<ir::Op> casts;
    std::vector<ir::ValueId> operands = dot.operands;
    for (int side = 0; side < 2; ++side) {
      ir::Type wide = fn.type(operands[size_t(side)]);
      wide.elem = DType::F16;
      ir::Op cast;
      cast.kind = OpKind::Cast;
      cast.operands = {operands[size_t(side)]};
      cast.results = {fn.new_value(wide)};
      operands[size_t(side)] = cast.results[0];
      casts.push_back(std::move(cast));
    }
    region.ops[i].operands = operands;
    region.ops.insert(region.ops.begin() + std::ptrdiff_t(i), casts.begin(), casts.end());
    i += casts.size();
  }
}

}  // namespace

bool widen_fp8_dots_left_on_fmas(ir::Function &fn, const TargetInfo &target, const LayoutPlan &plan) {
  if (!has_f16_instruction(target)) return false;
  std::set<ir::ValueId> left;  // by result: widening moves the ops the plan points at
  ir::walk(fn.body, [&](const ir::Op &op) {
    if (is_fp8_dot(fn, op) && plan.instruction_of(&op) < 0) left.insert(op.results[0]);
  });
  if (!left.empty()) widen(fn, fn.body, [&](ir::ValueId v) { return left.count(v) > 0; });
  return !left.empty();
}

}  // namespace kdsl::codegen::gpu
