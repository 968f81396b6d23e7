// lower_debug.cpp - device_print and device_assert: which thread reports which element, through the target's print and assert hooks
#include <fmt/format.h>

#include <kdsl/error.h>

#include "codegen/gpu/gpu_lowering.h"

namespace kdsl::codegen::gpu {
namespace {

// printf's text for a label or message: '%' doubled.
std::string literal(const std::string &text) {
  std::string out;
  for (char ch : text) out += ch == '%' ? std::string("%%") : std::string(1, ch);
  return out;
}

// The printf conversion and the promoted value of one element (C's varargs rules: floats as
// double, narrow integers as int).
std::pair<const char *, llvm::Value *> printf_argument(llvm::IRBuilder<> &b, DType t, llvm::Value *v) {
  if (is_float(t)) return {"%.8g", b.CreateFPExt(v, b.getDoubleTy())};
  if (t == DType::I64) return {"%lld", v};
  if (t == DType::U32) return {"%u", v};
  return {is_unsigned(t) ? "%u" : "%d", is_unsigned(t) ? b.CreateZExt(v, b.getInt32Ty()) : b.CreateSExt(v, b.getInt32Ty())};
}

}  // namespace

// Each thread prints the elements it holds (duplicates once), one line each: Triton's form,
// "pid (x, y, z) idx (i, j) label: value". A scalar is printed by thread 0.
void GpuLowering::emit_print(const ir::Op &op) {
  std::string label = literal(op.text);
  for (size_t k = 0; k < op.operands.size(); ++k) {
    ir::ValueId x = op.operands[k];
    const ir::Type &t = fn_.type(x);
    std::string name = op.operands.size() > 1 ? fmt::format("{} (operand {})", label, k) : label;
    auto line = [&](const Index &idx, llvm::Value *value) {
      auto [conversion, promoted] = printf_argument(b_, t.elem, value);
      std::vector<llvm::Value *> args{program_id(0), program_id(1), program_id(2)};
      std::string coords;
      for (int d = 0; d < t.shape.rank; ++d) {
        coords += d ? ", %d" : "%d";
        args.push_back(idx.coords[size_t(d)]);
      }
      args.push_back(promoted);
      std::string where = t.shape.rank ? fmt::format(" idx ({})", coords) : "";
      hooks_.print(b_, m_, fmt::format("pid (%d, %d, %d){} {}: {}\n", where, name, conversion), args);
    };
    if (t.shape.rank == 0) {
      llvm::Value *value = element(x, {});
      when(b_.CreateICmpEQ(thread_index(), b_.getInt32(0)), [&] { line(Index{}, value); });
      continue;
    }
    std::vector<llvm::Value *> regs = to_regs(x);
    for (int r = 0; r < int(regs.size()); ++r) {
      Index idx = own_index(x, r);
      if (idx.valid) when(idx.valid, [&] { line(idx, regs[size_t(r)]); });
      else line(idx, regs[size_t(r)]);
    }
  }
}

// A thread holding a false element reports where it is and stops the kernel (NVIDIA:
// vprintf and __assertfail, the launch fails with an assert error).
void GpuLowering::emit_assert(const ir::Op &op) {
  ir::ValueId cond = op.operands[0];
  const ir::Type &t = fn_.type(cond);
  auto fail = [&](const Index &idx) {
    std::vector<llvm::Value *> args{program_id(0), program_id(1), program_id(2)};
    std::string coords;
    for (int d = 0; d < t.shape.rank; ++d) {
      coords += d ? ", %d" : "%d";
      args.push_back(idx.coords[size_t(d)]);
    }
    std::string where = t.shape.rank ? fmt::format(" idx ({})", coords) : "";
    hooks_.assert_fail(b_, m_, fmt::format("pid (%d, %d, %d){} device_assert failed: {}\n", where, literal(op.text)), args, op.text, fn_.name);
  };
  if (t.shape.rank == 0) {
    llvm::Value *failed = b_.CreateAnd(b_.CreateNot(element(cond, {})), b_.CreateICmpEQ(thread_index(), b_.getInt32(0)));
    when(failed, [&] { fail(Index{}); });
    return;
  }
  std::vector<llvm::Value *> regs = to_regs(cond);
  for (int r = 0; r < int(regs.size()); ++r) {
    Index idx = own_index(cond, r);
    llvm::Value *failed = b_.CreateNot(regs[size_t(r)]);
    if (idx.valid) failed = b_.CreateAnd(failed, idx.valid);
    when(failed, [&] { fail(idx); });
  }
}

}  // namespace kdsl::codegen::gpu
