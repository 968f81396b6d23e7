// lower_debug.cpp - device_print through CUDA's vprintf and device_assert through __assertfail, per thread
#include <fmt/format.h>

#include <kdsl/error.h>

#include "codegen/nvptx/gpu_lowering.h"
#include "codegen/nvptx/nvptx_intrinsics.h"

namespace kdsl::codegen::nvptx {
namespace {

// printf's text for a label or message: '%' doubled.
std::string literal(const std::string &text) {
  std::string out;
  for (char ch : text) out += ch == '%' ? std::string("%%") : std::string(1, ch);
  return out;
}

// A NUL-terminated string in global memory, as a generic pointer (what vprintf and
// __assertfail take).
llvm::Value *global_string(llvm::IRBuilder<> &b, llvm::Module &m, const std::string &text, const char *name) {
  llvm::GlobalVariable *g = b.CreateGlobalString(text, name, kGlobalAddressSpace, &m);
  return b.CreateAddrSpaceCast(g, b.getPtrTy());
}

// The printf conversion and the promoted value of one element (C's varargs rules: floats as
// double, narrow integers as int).
std::pair<const char *, llvm::Value *> printf_argument(llvm::IRBuilder<> &b, DType t, llvm::Value *v) {
  if (is_float(t)) return {"%.8g", b.CreateFPExt(v, b.getDoubleTy())};
  if (t == DType::I64) return {"%lld", v};
  if (t == DType::U32) return {"%u", v};
  return {is_unsigned(t) ? "%u" : "%d", is_unsigned(t) ? b.CreateZExt(v, b.getInt32Ty()) : b.CreateSExt(v, b.getInt32Ty())};
}

// vprintf(format, buffer): the arguments laid out as a C struct of their types on the stack.
void emit_vprintf(llvm::IRBuilder<> &b, llvm::Module &m, const std::string &format, const std::vector<llvm::Value *> &args) {
  llvm::Function *f = b.GetInsertBlock()->getParent();
  std::vector<llvm::Type *> types;
  for (llvm::Value *a : args) types.push_back(a->getType());
  llvm::StructType *layout = llvm::StructType::get(b.getContext(), types);
  llvm::IRBuilder<> entry(&f->getEntryBlock(), f->getEntryBlock().begin());
  llvm::AllocaInst *buffer = entry.CreateAlloca(layout, nullptr, "printf.args");
  for (size_t i = 0; i < args.size(); ++i) b.CreateStore(args[i], b.CreateStructGEP(layout, buffer, unsigned(i)));
  llvm::FunctionCallee vprintf = m.getOrInsertFunction("vprintf", llvm::FunctionType::get(b.getInt32Ty(), {b.getPtrTy(), b.getPtrTy()}, false));
  b.CreateCall(vprintf, {global_string(b, m, format, "printf.format"), buffer});
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
      emit_vprintf(b_, m_, fmt::format("pid (%d, %d, %d){} {}: {}\n", where, name, conversion), args);
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

// A thread holding a false element prints where it is and calls __assertfail, CUDA's assert:
// the kernel stops and the launch fails with an assert error (the driver prints the message).
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
    emit_vprintf(b_, m_, fmt::format("pid (%d, %d, %d){} device_assert failed: {}\n", where, literal(op.text)), args);
    llvm::FunctionCallee assertfail = m_.getOrInsertFunction(
        "__assertfail", llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy(), b_.getPtrTy(), b_.getInt32Ty(), b_.getPtrTy(), b_.getInt64Ty()}, false));
    b_.CreateCall(assertfail, {global_string(b_, m_, op.text, "assert.message"), global_string(b_, m_, "kdsl kernel", "assert.file"), b_.getInt32(0),
                               global_string(b_, m_, fn_.name, "assert.function"), b_.getInt64(1)});
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

}  // namespace kdsl::codegen::nvptx
