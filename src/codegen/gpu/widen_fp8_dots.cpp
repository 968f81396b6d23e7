// widen_fp8_dots.cpp - casts to f16 in front of f8e4m3 dots where the target multiplies f16 on tensor cores but not fp8
#include "codegen/gpu/widen_fp8_dots.h"

#include <algorithm>

namespace kdsl::codegen::gpu {
namespace {

bool has_instruction(const TargetInfo &target, DType operands) {
  return std::any_of(target.matrix_instructions.begin(), target.matrix_instructions.end(),
                     [&](const MatrixInstruction &mi) { return mi.a == operands && mi.b == operands && mi.acc == DType::F32 && !mi.tf32; });
}

void widen(ir::Function &fn, ir::Region &region) {
  for (size_t i = 0; i < region.ops.size(); ++i) {
    for (ir::Region &inner : region.ops[i].regions) widen(fn, inner);
    const ir::Op &dot = region.ops[i];
    if (dot.kind != OpKind::Dot || fn.type(dot.operands[0]).elem != DType::F8E4M3 || fn.type(dot.operands[1]).elem != DType::F8E4M3 ||
        fn.type(dot.results[0]).elem != DType::F32)
      continue;
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

void widen_fp8_dots(ir::Function &fn, const TargetInfo &target) {
  if (has_instruction(target, DType::F8E4M3) || !has_instruction(target, DType::F16)) return;
  widen(fn, fn.body);
}

}  // namespace kdsl::codegen::gpu
