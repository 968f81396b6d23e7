// checked_mode.cpp - checked mode at launch: extents for the kernel, the violation it recorded as a kdsl::Error message
#include "runtime/checked_mode.h"

#include <fmt/format.h>

#include <limits>

#include "ir/ir.h"

namespace kdsl::detail {

std::string param_type_text(const TypeDesc &t) {
  if (!t.is_ptr) return fmt::format("Scalar<{}>", dtype_name(t.elem));
  return fmt::format("Ptr<{}{}>", t.read_only ? "const " : "", dtype_name(t.elem));
}

void fill_check_slots(const std::vector<TypeDesc> &params, const ArgValue *args, uint64_t *slots) {
  const size_t n = params.size();
  for (size_t i = 0; i < n; ++i) {
    bool known = params[i].is_ptr && args[i].extent >= 0;
    slots[n + i] = known ? args[i].bits : 0;
    slots[2 * n + i] = known ? uint64_t(args[i].extent) * uint64_t(dtype_bytes(params[i].elem)) : std::numeric_limits<uint64_t>::max();
  }
}

std::string violation_message(const std::string &kernel, const std::vector<TypeDesc> &params, const ArgValue *args, const codegen::BoundsViolation &v) {
  const size_t arg = size_t(v.arg);
  const TypeDesc &p = params.at(arg);
  const OpKind op = OpKind(v.op);
  std::string access = op == OpKind::Load ? "load from" : op == OpKind::Store ? "store to" : fmt::format("{} on", ir::op_name(op));
  const int64_t bytes = dtype_bytes(p.elem);
  return fmt::format("kernel '{}': {} argument {} ({}) at element {} of program ({}, {}, {}): the buffer holds {} elements", kernel, access, arg,
                     param_type_text(p), v.byte_offset / bytes, v.program[0], v.program[1], v.program[2], args[arg].extent);
}

}  // namespace kdsl::detail
