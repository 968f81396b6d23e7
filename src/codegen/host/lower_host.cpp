// lower_host.cpp - block IR to LLVM IR for the host: loop nests over blocks, fused index math
#include "codegen/host/lower_host.h"

#include <algorithm>
#include <memory>

#include <fmt/format.h>
#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/Metadata.h>

#include <kdsl/error.h>

#include "codegen/atomic_semantics.h"
#include "codegen/codegen.h"
#include "codegen/element_semantics.h"
#include "codegen/host/bounds_checks.h"
#include "codegen/host/counted_loop.h"
#include "codegen/host/dot_tile.h"
#include "codegen/host/device_debug.h"
#include "codegen/host/element_math.h"
#include "codegen/host/int_dot.h"
#include "codegen/host/int_dot_tile.h"
#include "codegen/host/storage_plan.h"
#include "codegen/host/target_machine.h"
#include "codegen/host/vector_math.h"
#include "ir/value_ranges.h"

namespace kdsl::codegen {
namespace {

// How the host widens f16. LLVM 19's cost model prices a vector `fpext half` as 4 wide at most
// on x86, so a loop widening f16 is vectorized 4 wide unless told otherwise. Where the CPU
// converts f16 in hardware (F16C: one vcvtph2ps per 8 or 16 values) the lowering emits fpext and
// marks the loop with the full vector width, the `forced_width` here; elsewhere it widens with
// integer operations, which the cost model vectorizes fully on its own.
struct F16Widening {
  bool native = false;
  int forced_width = 0;  // f32 lanes of the widest vector; 0: leave the width to LLVM
};

bool host_has(const char *feature) { return host_has_feature(feature); }

F16Widening host_f16_widening() {
  F16Widening w;
  w.native = host_has("f16c");
  if (w.native) w.forced_width = host_has("avx512f") ? 16 : host_has("avx") ? 8 : 4;
  return w;
}

// The host's vector registers, for dot's register tiles (dot_tile.h): how many, and f32 lanes
// in each; the ports and latency keep DotMachine's defaults.
DotMachine host_dot_machine() {
  DotMachine m;
  if (host_has("avx512f")) m.registers = 32, m.lanes = 16;
  else if (host_has("avx")) m.registers = 16, m.lanes = 8;
  else m.registers = 16, m.lanes = 4;  // SSE, NEON
  return m;
}

// The host's element math: exp, exp2, log, log2, tanh, erf and sigmoid as inline polynomials
// (vector_math.h, so loops vectorize), f16 widened as F16Widening says, the rest (sin, cos,
// pow, fmod) from LLVM intrinsics or libm.
class HostElements final : public ElementSemantics {
 public:
  HostElements(llvm::IRBuilder<> &b, llvm::Module &m) : ElementSemantics(b, m, 0), f16_(host_f16_widening()) {}

  // Bumped on each f16 widening emitted, so a loop can tell whether its body widened any.
  int64_t f16_widenings() const { return f16_widenings_; }
  int forced_f16_width() const { return f16_.forced_width; }
  // Whether from_storage widens a vector of `t` as one (else element by element only): f16
  // without F16C goes through integer code written for one element.
  bool widens_vectors_of(DType t) const { return t != DType::F16 || f16_.native; }

 protected:
  llvm::Value *widen_f16(llvm::Value *half_value) override {
    ++f16_widenings_;
    if (f16_.native) return b_.CreateFPExt(half_value, half_value->getType()->getWithNewType(b_.getFloatTy()));
    return emit_f16_bits_to_f32(b_, b_.CreateBitCast(half_value, b_.getInt16Ty()));
  }

  llvm::Value *math(OpKind kind, llvm::Value *x, llvm::Value *y) override {
    auto unary = [&](llvm::Intrinsic::ID id) { return b_.CreateUnaryIntrinsic(id, x); };
    llvm::Value *one = llvm::ConstantFP::get(b_.getFloatTy(), 1.0);
    switch (kind) {
      case OpKind::Exp: return emit_exp(b_, x);
      case OpKind::Exp2: return emit_exp2(b_, x);
      case OpKind::Log: return emit_log(b_, x);
      case OpKind::Log2: return emit_log2(b_, x);
      case OpKind::Sqrt: return unary(llvm::Intrinsic::sqrt);
      case OpKind::Rsqrt: return b_.CreateFDiv(one, unary(llvm::Intrinsic::sqrt));
      case OpKind::Sin: return unary(llvm::Intrinsic::sin);
      case OpKind::Cos: return unary(llvm::Intrinsic::cos);
      case OpKind::Tanh: return emit_tanh(b_, x);
      case OpKind::Erf: return emit_erf(b_, x);
      case OpKind::Sigmoid: return emit_sigmoid(b_, x);
      // powf, one call per element: a polynomial pow needs log2 in more than f32's precision.
      case OpKind::Pow: return b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, x, y);
      case OpKind::Rem: return b_.CreateFRem(x, y);
      default: internal_error(fmt::format("host lowering: {} is not a math function", ir::op_name(kind)));
    }
  }

 private:
  F16Widening f16_;
  int64_t f16_widenings_ = 0;
};

using Index = std::vector<llvm::Value *>;  // one i64 per axis of the value being read

struct ValueState {
  llvm::Value *scalar = nullptr;       // rank-0 values
  llvm::AllocaInst *array = nullptr;   // materialized blocks
};

class HostLowering {
 public:
  HostLowering(const ir::Function &fn, llvm::Module &m, bool bounds_checks, IntDotPath int_dot)
      : fn_(fn), m_(m), ctx_(m.getContext()), b_(ctx_), el_(b_, m), plan_(plan_storage(fn)), ranges_(fn), bounds_checks_(bounds_checks), int_dot_(int_dot) {}

  void run(const std::string &symbol) {
    llvm::Function *body = emit_body(symbol + ".body");
    emit_entry(symbol, body);
  }

 private:
  // --- types: the shared element semantics, with the host's math -------------------------

  llvm::Type *compute_type(DType t) { return el_.compute_type(t); }
  llvm::Type *compute_type(const ir::Type &t) { return el_.compute_type(t); }
  llvm::Type *storage_type(DType t) { return el_.storage_type(t); }
  llvm::Value *from_storage(llvm::Value *v, DType t) { return el_.from_storage(v, t); }
  llvm::Value *to_storage(llvm::Value *v, DType t) { return el_.to_storage(v, t); }
  llvm::Value *round_to(llvm::Value *v, DType t) { return el_.round_to(v, t); }
  llvm::Value *constant(const ir::Type &t, int64_t i, double f) { return el_.constant(t, i, f); }

  // --- loops ----------------------------------------------------------------------------

  llvm::Function *current_function() { return b_.GetInsertBlock()->getParent(); }

  // for (i = 0; i < n; ++i) body(i), with n >= 1. An innermost loop that widens f16 is marked
  // with the vector width the host converts f16 at (see F16Widening); `vectorize_width` marks
  // a loop LLVM should vectorize at that width (before its full unroll makes it scalar code).
  template <class F>
  void loop(int64_t n, F &&body, int vectorize_width = 0) {
    const int64_t widenings_before = el_.f16_widenings(), loops_before = ++loops_emitted_;
    llvm::BasicBlock *pre = b_.GetInsertBlock();
    llvm::BasicBlock *head = llvm::BasicBlock::Create(ctx_, "loop", current_function());
    llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx_, "loop.end", current_function());
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode *i = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
    i->addIncoming(b_.getInt64(0), pre);
    body(static_cast<llvm::Value *>(i));
    llvm::Value *next = b_.CreateAdd(i, b_.getInt64(1), "i.next", true, true);
    i->addIncoming(next, b_.GetInsertBlock());
    llvm::BranchInst *latch = b_.CreateCondBr(b_.CreateICmpSLT(next, b_.getInt64(n)), head, exit);
    const bool innermost = loops_emitted_ == loops_before;
    if (innermost && el_.f16_widenings() != widenings_before && el_.forced_f16_width() > 0 && n >= el_.forced_f16_width())
      latch->setMetadata(llvm::LLVMContext::MD_loop, vectorize_width_metadata(el_.forced_f16_width()));
    else if (vectorize_width > 0 && n >= vectorize_width)
      latch->setMetadata(llvm::LLVMContext::MD_loop, vectorize_width_metadata(vectorize_width));
    b_.SetInsertPoint(exit);
  }

  // !llvm.loop !{self, !{"llvm.loop.vectorize.width", width}, !{"llvm.loop.vectorize.enable", true}}
  llvm::MDNode *vectorize_width_metadata(int width) {
    auto hint = [&](const char *name, llvm::Constant *value) {
      return llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, name), llvm::ConstantAsMetadata::get(value)});
    };
    llvm::TempMDTuple self = llvm::MDNode::getTemporary(ctx_, {});
    llvm::MDNode *id = llvm::MDNode::getDistinct(
        ctx_, {self.get(), hint("llvm.loop.vectorize.width", b_.getInt32(uint32_t(width))), hint("llvm.loop.vectorize.enable", b_.getTrue())});
    id->replaceOperandWith(0, id);
    return id;
  }

  template <class F>
  void loop_nest(const ir::Shape &shape, F &&body, Index idx = {}) {
    if (int(idx.size()) == shape.rank) return body(idx);
    loop(shape[int(idx.size())], [&](llvm::Value *i) {
      Index inner = idx;
      inner.push_back(i);
      loop_nest(shape, body, inner);
    });
  }

  // if (cond) then(): a conditional block in the current function.
  template <class F>
  void when(llvm::Value *cond, F &&then) {
    llvm::BasicBlock *yes = llvm::BasicBlock::Create(ctx_, "then", current_function());
    llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "endif", current_function());
    b_.CreateCondBr(cond, yes, done);
    b_.SetInsertPoint(yes);
    then();
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  }

  llvm::Value *linear(const Index &idx, const ir::Shape &shape) {
    llvm::Value *offset = b_.getInt64(0);
    for (int d = 0; d < shape.rank; ++d) offset = b_.CreateAdd(b_.CreateMul(offset, b_.getInt64(shape[d]), "", true, true), idx[size_t(d)], "", true, true);
    return offset;
  }

  llvm::AllocaInst *alloca_array(const ir::Type &t, const char *name) {
    llvm::IRBuilder<> entry(allocas_->getParent(), allocas_->getIterator());
    auto *ty = llvm::ArrayType::get(compute_type(t), uint64_t(t.shape.numel()));
    auto *a = entry.CreateAlloca(ty, nullptr, name);
    a->setAlignment(llvm::Align(64));
    return a;
  }
  llvm::AllocaInst *alloca_slot(llvm::Type *ty, const char *name) {
    llvm::IRBuilder<> entry(allocas_->getParent(), allocas_->getIterator());
    return entry.CreateAlloca(ty, nullptr, name);
  }

  llvm::Value *array_element_ptr(llvm::AllocaInst *array, const ir::Type &t, const Index &idx) {
    return b_.CreateInBoundsGEP(compute_type(t), array, linear(idx, t.shape));
  }

  // --- reading values -------------------------------------------------------------------

  llvm::Value *element(ir::ValueId v, const Index &idx) {
    const ir::Type &t = fn_.type(v);
    ValueState &st = state_[size_t(v)];
    if (t.shape.rank == 0 && st.scalar) return st.scalar;
    if (st.array) return b_.CreateLoad(compute_type(t), array_element_ptr(st.array, t, idx));
    const ir::Op *def = plan_.def[size_t(v)];
    if (!def || plan_.storage[size_t(v)] != Storage::Fused) internal_error(fmt::format("host lowering: value {} ({}) read before it was computed", v, t.str()));
    return compute(*def, idx);
  }

  // Element `flat` of v in row-major order, as a reshape reads it. A row-major array keeps
  // its offsets through any chain of reshapes, so an array under them is read at `flat`
  // itself; only a value computed per element needs the index taken apart (a udiv and urem
  // an axis, which LLVM cannot always fold back: a dot's operand that is a reshaped tile of x
  // paid them for every element it broadcast).
  llvm::Value *element_at_flat(ir::ValueId v, llvm::Value *flat) {
    const ir::Type &t = fn_.type(v);
    const ValueState &st = state_[size_t(v)];
    if (st.array) return b_.CreateLoad(compute_type(t), b_.CreateInBoundsGEP(compute_type(t), st.array, flat));
    const ir::Op *def = plan_.def[size_t(v)];
    if (def && def->kind == OpKind::Reshape && plan_.storage[size_t(v)] == Storage::Fused) return element_at_flat(def->operands[0], flat);
    const ir::Shape &shape = t.shape;
    Index mapped(size_t(shape.rank));
    for (int d = shape.rank - 1; d >= 0; --d) {
      mapped[size_t(d)] = b_.CreateURem(flat, b_.getInt64(shape[d]));
      flat = b_.CreateUDiv(flat, b_.getInt64(shape[d]));
    }
    return element(v, mapped);
  }

  // --- computing one element of an op's result --------------------------------------------

  llvm::Value *compute(const ir::Op &op, const Index &idx) {
    const ir::Type &out = fn_.type(op.results[0]);
    auto arg = [&](size_t i) { return element(op.operands[i], idx); };
    auto arg_type = [&](size_t i) -> const ir::Type & { return fn_.type(op.operands[i]); };
    switch (op.kind) {
      case OpKind::Constant: return constant(out, op.ints.empty() ? 0 : op.ints[0], op.fval);
      case OpKind::ProgramId: return pid_[size_t(op.ints[0])];
      case OpKind::NumPrograms: return grid_[size_t(op.ints[0])];
      case OpKind::Arange: return b_.CreateAdd(b_.CreateTrunc(idx[0], b_.getInt32Ty()), b_.getInt32(int32_t(op.ints[0])));
      case OpKind::Broadcast: {
        const ir::Shape &in = arg_type(0).shape;
        Index mapped(idx.size());
        for (int d = 0; d < in.rank; ++d) mapped[size_t(d)] = in[d] == 1 ? b_.getInt64(0) : idx[size_t(d)];
        return element(op.operands[0], mapped);
      }
      case OpKind::ExpandDims: {
        Index mapped = idx;
        mapped.erase(mapped.begin() + op.ints[0]);
        return element(op.operands[0], mapped);
      }
      case OpKind::Reshape: return element_at_flat(op.operands[0], linear(idx, out.shape));
      case OpKind::Trans: {
        Index mapped(idx.size());
        for (size_t d = 0; d < idx.size(); ++d) mapped[size_t(op.ints[d])] = idx[d];
        return element(op.operands[0], mapped);
      }
      case OpKind::PtrAdd: {
        llvm::Value *offset = arg(1);
        offset = is_unsigned(arg_type(1).elem) ? b_.CreateZExt(offset, b_.getInt64Ty()) : b_.CreateSExt(offset, b_.getInt64Ty());
        return b_.CreateGEP(storage_type(out.elem), arg(0), offset);
      }
      case OpKind::Load: return load(op, idx);
      case OpKind::Gather: return gather(op, idx);
      case OpKind::ReduceSum: case OpKind::ReduceMax: case OpKind::ReduceMin: case OpKind::ArgMax: case OpKind::ArgMin:
        return reduce(op, idx);
      default: {
        if (!ir::is_elementwise(op.kind)) internal_error(fmt::format("host lowering: {} cannot be computed per element", ir::op_name(op.kind)));
        return el_.elementwise(op, fn_, arg);
      }
    }
  }

  llvm::Value *load(const ir::Op &op, const Index &idx) {
    const ir::Type &out = fn_.type(op.results[0]);
    llvm::Type *mem = storage_type(out.elem);
    auto plain = [&] {
      llvm::Value *p = element(op.operands[0], idx);
      auto read = [&] { return from_storage(b_.CreateLoad(mem, p), out.elem); };
      if (!checks_) return read();
      // Checked mode: an address outside its argument reads 0 (after the violation is recorded).
      return only_where(checks_->in_bounds(op, op.operands[0], p, dtype_bytes(out.elem)), read, constant(out, 0, 0.0));
    };
    if (op.operands.size() == 1) return plain();
    // Masked: the address is only formed and read where the mask holds.
    llvm::Value *mask = element(op.operands[1], idx);
    llvm::Value *other = element(op.operands[2], idx);
    return only_where(mask, plain, other);
  }

  // cond ? value() : otherwise, where value() is emitted in a block entered only when cond
  // holds (so the memory it reads is touched only then).
  template <class F>
  llvm::Value *only_where(llvm::Value *cond, F &&value, llvm::Value *otherwise) {
    llvm::BasicBlock *from = b_.GetInsertBlock();
    llvm::BasicBlock *yes = llvm::BasicBlock::Create(ctx_, "load", current_function());
    llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "load.end", current_function());
    b_.CreateCondBr(cond, yes, done);
    b_.SetInsertPoint(yes);
    llvm::Value *loaded = value();
    llvm::BasicBlock *loaded_in = b_.GetInsertBlock();
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    llvm::PHINode *phi = b_.CreatePHI(loaded->getType(), 2);
    phi->addIncoming(loaded, loaded_in);
    phi->addIncoming(otherwise, from);
    return phi;
  }

  // src at idx with the gather axis replaced by index[idx]; 0 for an index outside src.
  llvm::Value *gather(const ir::Op &op, const Index &idx) {
    const ir::Type &src = fn_.type(op.operands[0]), &index = fn_.type(op.operands[1]);
    const size_t axis = size_t(op.ints[0]);
    llvm::Value *i = element(op.operands[1], idx);
    i = is_unsigned(index.elem) ? b_.CreateZExt(i, b_.getInt64Ty()) : b_.CreateSExt(i, b_.getInt64Ty());
    llvm::Value *inside = b_.CreateICmpULT(i, b_.getInt64(src.shape[int(axis)]));  // negative ones wrap to huge
    Index mapped = idx;
    mapped[axis] = b_.CreateSelect(inside, i, b_.getInt64(0));
    return b_.CreateSelect(inside, element(op.operands[0], mapped), constant(fn_.type(op.results[0]), 0, 0.0));
  }

  // A reduction in progress: its accumulator (and, for argmax/argmin, the best index).
  struct Accumulator {
    const ir::Op *op = nullptr;
    llvm::AllocaInst *acc = nullptr, *best = nullptr;
    llvm::Type *type = nullptr;
    bool fp = false, sign = true;
  };

  Accumulator start_reduction(const ir::Op &op) {
    const ir::Type &in = fn_.type(op.operands[0]);
    Accumulator a;
    a.op = &op;
    a.fp = is_float(in.elem);
    a.sign = !is_unsigned(in.elem);
    a.type = compute_type(in.elem);
    a.acc = alloca_slot(a.type, "acc");
    bool arg = op.kind == OpKind::ArgMax || op.kind == OpKind::ArgMin;
    if (arg) a.best = alloca_slot(b_.getInt32Ty(), "argbest");
    double inf = __builtin_huge_val();
    auto extreme = [&](bool largest) -> llvm::Value * {
      if (a.fp) return llvm::ConstantFP::get(a.type, largest ? inf : -inf);
      unsigned bits = a.type->getIntegerBitWidth();
      if (a.sign) return b_.getInt(largest ? llvm::APInt::getSignedMaxValue(bits) : llvm::APInt::getSignedMinValue(bits));
      return b_.getInt(largest ? llvm::APInt::getMaxValue(bits) : llvm::APInt::getMinValue(bits));
    };
    llvm::Value *init = op.kind == OpKind::ReduceSum ? constant(in, 0, 0.0)
                        : (op.kind == OpKind::ReduceMax || op.kind == OpKind::ArgMax) ? extreme(false)
                                                                                       : extreme(true);
    b_.CreateStore(init, a.acc);
    if (a.best) b_.CreateStore(b_.getInt32(0), a.best);
    return a;
  }

  // The flags of a reduction's adds and extremes: they let the vectorizer split it into lanes.
  static llvm::FastMathFlags reduction_flags() {
    llvm::FastMathFlags reassoc;
    reassoc.setAllowReassoc();
    reassoc.setNoNaNs();
    reassoc.setNoSignedZeros();
    return reassoc;
  }

  // Folds element x (at position i of the reduced axis) into the accumulator.
  void accumulate(const Accumulator &a, llvm::Value *x, llvm::Value *i) {
    const llvm::FastMathFlags reassoc = reduction_flags();
    llvm::Value *prior = b_.CreateLoad(a.type, a.acc);
    llvm::Value *next = nullptr;
    switch (a.op->kind) {
      case OpKind::ReduceSum:
        next = a.fp ? b_.CreateFAdd(prior, x) : b_.CreateAdd(prior, x);
        if (a.fp) {
          // A sum of products (a dot product written as sum(a * b)) may fuse each multiply
          // into its add: one FMA, one rounding fewer, as the dot lowering already allows.
          llvm::FastMathFlags sum_flags = reassoc;
          sum_flags.setAllowContract();
          llvm::cast<llvm::Instruction>(next)->setFastMathFlags(sum_flags);
          if (auto *product = llvm::dyn_cast<llvm::BinaryOperator>(x); product && product->getOpcode() == llvm::Instruction::FMul) {
            llvm::FastMathFlags contract = product->getFastMathFlags();
            contract.setAllowContract();
            product->setFastMathFlags(contract);
          }
        }
        break;
      case OpKind::ReduceMax:
      case OpKind::ReduceMin: {
        bool mx = a.op->kind == OpKind::ReduceMax;
        if (a.fp) {
          next = b_.CreateBinaryIntrinsic(mx ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum, prior, x);
          llvm::cast<llvm::Instruction>(next)->setFastMathFlags(reassoc);
        } else {
          next = b_.CreateBinaryIntrinsic(mx ? (a.sign ? llvm::Intrinsic::smax : llvm::Intrinsic::umax) : (a.sign ? llvm::Intrinsic::smin : llvm::Intrinsic::umin), prior, x);
        }
        break;
      }
      default: {  // argmax / argmin: strictly better only, so the first index wins
        bool mx = a.op->kind == OpKind::ArgMax;
        llvm::Value *better = a.fp ? (mx ? b_.CreateFCmpOGT(x, prior) : b_.CreateFCmpOLT(x, prior))
                                   : (mx ? (a.sign ? b_.CreateICmpSGT(x, prior) : b_.CreateICmpUGT(x, prior))
                                         : (a.sign ? b_.CreateICmpSLT(x, prior) : b_.CreateICmpULT(x, prior)));
        // The first element always initialises, so an all-minimal (or all -inf) row gives 0.
        better = b_.CreateOr(better, b_.CreateICmpEQ(i, b_.getInt64(0)));
        next = b_.CreateSelect(better, x, prior);
        b_.CreateStore(b_.CreateSelect(better, b_.CreateTrunc(i, b_.getInt32Ty()), b_.CreateLoad(b_.getInt32Ty(), a.best)), a.best);
      }
    }
    b_.CreateStore(next, a.acc);
  }

  llvm::Value *finish_reduction(const Accumulator &a) {
    if (a.best) return b_.CreateLoad(b_.getInt32Ty(), a.best);
    llvm::Value *r = b_.CreateLoad(a.type, a.acc);
    return a.fp ? round_to(r, fn_.type(a.op->operands[0]).elem) : r;
  }

  // One element of a reduction's result: a loop over the reduced axis. An f32 sum over a short
  // last axis (a kernel's lanes, [.., 4] or [.., 8], summed once after its loop) is one
  // vector reduce of the row instead. Written as scalar adds, the SLP vectorizer seeded its
  // vectors at that sum (one vector per lane across the rows) and carried the layout back into
  // the loop: the lanes' accumulators were transposed there in every step (bench/RESULTS.md,
  // 2026-12-04, "rows of lanes").
  llvm::Value *reduce(const ir::Op &op, const Index &idx) {
    int axis = int(op.ints[0]);
    const ir::Type &in = fn_.type(op.operands[0]);
    if (unsigned lanes = lane_count(in); lanes && op.kind == OpKind::ReduceSum && in.elem == DType::F32 && axis == in.shape.rank - 1) {
      llvm::Value *row = group_of_elements(DType::F32, 1, lanes, idx, [&](const Index &full) { return element(op.operands[0], full); });
      llvm::Value *sum = b_.CreateFAddReduce(llvm::ConstantFP::getNegativeZero(b_.getFloatTy()), row);
      llvm::cast<llvm::Instruction>(sum)->setFastMathFlags(reduction_flags());
      return sum;
    }
    Accumulator a = start_reduction(op);
    loop(fn_.type(op.operands[0]).shape[axis], [&](llvm::Value *i) {
      Index full = idx;
      full.insert(full.begin() + axis, i);
      accumulate(a, element(op.operands[0], full), i);
    });
    return finish_reduction(a);
  }

  // --- ops ------------------------------------------------------------------------------

  // The array a value is computed into: a fresh one, or the carried storage it updates in place.
  llvm::AllocaInst *target_array(ir::ValueId v, const char *name) {
    ir::ValueId carried = plan_.write_into[size_t(v)];
    if (carried != ir::kNoValue) return state_[size_t(carried)].array;
    return alloca_array(fn_.type(v), name);
  }

  // Stores an already computed or fused value into a new (or given) array; a value in rows of
  // lanes (below) a group of rows at a time.
  void materialize(ir::ValueId v, llvm::AllocaInst *into) {
    const ir::Type &t = fn_.type(v);
    if (copy_rows_of_load(v, into)) return;
    // A fused gather (IQ4_NL's levels, transposed into a byte-dot tile) looks up as one.
    const ir::Op *def = plan_.def[size_t(v)];
    if (def && !state_[size_t(v)].array && plan_.storage[size_t(v)] == Storage::Fused && lookup_bytes_in_table(*def, into)) return;
    if (unsigned lanes = lanes_for(v)) {
      store_lane_groups(t, into, lanes, [&](const Index &base, unsigned rows) { return lane_group(v, base, rows, lanes); });
      return;
    }
    loop_nest(t.shape, [&](const Index &idx) { b_.CreateStore(element(v, idx), array_element_ptr(into, t, idx)); });
  }

  // An unmasked load whose pointers are consecutive along the last axis (last_axis_stride),
  // stored into an array a row at a time, in register-wide vectors. Element by element, a tile
  // of x whose rows are clamped (minimum(rm, M - 1), as the matmul kernels read x) cost a byte
  // or float load and its address per element, the largest part of the byte-dot prefill
  // kernel's time besides its products (bench/RESULTS.md, 2026-12-05, byte dots as register
  // tiles). False (nothing emitted) where it does not apply.
  bool copy_rows_of_load(ir::ValueId v, llvm::AllocaInst *into) {
    const ir::Type &t = fn_.type(v);
    const ir::Op *def = plan_.def[size_t(v)];
    if (state_[size_t(v)].array || !def || def->kind != OpKind::Load || def->operands.size() != 1 || checks_ || t.shape.rank == 0) return false;
    const int last = t.shape.rank - 1;
    const int64_t width = t.shape[last];
    llvm::Type *element_type = storage_type(t.elem);
    if (width < kWholeRowStore || element_type != compute_type(t.elem) || last_axis_stride(def->operands[0]) != 1) return false;
    const int64_t bytes = int64_t(m_.getDataLayout().getTypeAllocSize(element_type));
    ir::Shape rows = t.shape;
    rows.rank -= 1;
    loop_nest(rows, [&](const Index &row) {
      Index at = row;
      at.push_back(b_.getInt64(0));
      llvm::Value *first = element(def->operands[0], at);
      row_in_vectors(width, bytes, [&](llvm::Value *i, int64_t n) {
        at.back() = i;
        llvm::Value *values = b_.CreateAlignedLoad(llvm::FixedVectorType::get(element_type, unsigned(n)), b_.CreateInBoundsGEP(element_type, first, i), llvm::Align(bytes));
        b_.CreateAlignedStore(values, array_element_ptr(into, t, at), llvm::Align(bytes));
      });
    });
    return true;
  }

  // A gather of bytes along the last axis from a table of at most 16 (src's rows), by indices
  // proved to lie in it, themselves bytes: 16 lookups a vpshufb (SSSE3), the indices
  // materialized first.
  // IQ4_NL's nibbles become its grid's levels so (kernels/matvec_int8.h); element by element,
  // a gather picks with a compare and select each. False (nothing emitted) where it does not
  // apply: other types, a longer table, unproved indices, rows not a multiple of 16, or the
  // portable path.
  bool lookup_bytes_in_table(const ir::Op &op, llvm::AllocaInst *into) {
    if (op.kind != OpKind::Gather || resolve_int_dot_path(int_dot_) == IntDotPath::Portable) return false;
    const ir::Type &t = fn_.type(op.results[0]), &src = fn_.type(op.operands[0]);
    const int last = t.shape.rank - 1;
    if (last < 0 || op.ints[0] != last || (t.elem != DType::I8 && t.elem != DType::U8) || src.shape[last] > 16 || t.shape[last] % 16 || checks_) return false;
    const std::optional<ir::ValueRange> index = ranges_.of(op.operands[1]);
    const ir::Type &it = fn_.type(op.operands[1]);
    if (!index || index->lo < 0 || index->hi >= src.shape[last] || dtype_bytes(it.elem) != 1) return false;
    llvm::AllocaInst *indices = state_[size_t(op.operands[1])].array;
    if (!indices) {
      indices = alloca_array(it, "lookup.index");
      materialize(op.operands[1], indices);
    }
    auto *bytes = llvm::FixedVectorType::get(b_.getInt8Ty(), 16);
    ir::Shape rows = t.shape;
    rows.rank -= 1;
    loop_nest(rows, [&](const Index &row) {
      Index at = row;
      at.push_back(nullptr);
      llvm::Value *table = llvm::Constant::getNullValue(bytes);
      for (int64_t k = 0; k < src.shape[last]; ++k) {
        at.back() = b_.getInt64(k);
        table = b_.CreateInsertElement(table, element(op.operands[0], at), uint64_t(k));
      }
      for (int64_t first = 0; first < t.shape[last]; first += 16) {
        at.back() = b_.getInt64(first);
        llvm::Value *i = b_.CreateAlignedLoad(bytes, array_element_ptr(indices, it, at), llvm::Align(1));
        b_.CreateAlignedStore(b_.CreateIntrinsic(llvm::Intrinsic::x86_ssse3_pshuf_b_128, {}, {table, i}), array_element_ptr(into, t, at), llvm::Align(1));
      }
    });
    return true;
  }

  // --- rows of lanes ------------------------------------------------------------------------
  // An f32 or i32 value whose last axis is short (2 to 16, a power of two) is a kernel's lanes:
  // dot4's [.., 4] sums, an accumulator's [.., 8]. It is computed as vectors of whole rows,
  // as many consecutive rows a vector as fill 8 elements (two rows of 4 lanes: one AVX2
  // register), where its ops allow (arithmetic, i32 to f32, broadcasts, arrays); a broadcast
  // along the lanes (a scale per weight row) repeats each row's one element across its lanes.
  // Written per element instead, the SLP vectorizer built its vectors across the rows (one per
  // lane, to meet a [BN] vector of scales) and transposed every dot4 result to get there
  // (bench/RESULTS.md, 2026-12-04, "rows of lanes").
  llvm::FixedVectorType *group_type(DType elem, unsigned rows, unsigned lanes) {
    return llvm::FixedVectorType::get(compute_type(elem), rows * lanes);
  }

  // Index `base` with the row axis (the one before the lanes) moved on by `row` and the lane set.
  static Index lane_index(const Index &base, int64_t row, llvm::Value *lane, llvm::IRBuilder<> &b) {
    Index idx = base;
    if (row) idx.back() = b.CreateAdd(idx.back(), b.getInt64(row));
    idx.push_back(lane);
    return idx;
  }

  // Calls group_value(base, rows) for each group of `rows` consecutive rows of t and stores the
  // vector it returns; base indexes every axis but the lanes, at the group's first row.
  template <class F>
  void store_lane_groups(const ir::Type &t, llvm::AllocaInst *into, unsigned lanes, F &&group_value) {
    const int rank = t.shape.rank;
    // Elements a group: one ymm of 32-bit lanes; a row of bytes, or two of 8 (rows of bytes put
    // together into a ymm took more than the wider vectors saved).
    const unsigned group = dtype_bytes(t.elem) == 1 ? 16 : 8;
    unsigned rows = 1;
    if (rank >= 2)
      for (unsigned r = std::max(1u, group / lanes); r > 1 && rows == 1; r /= 2)
        if (t.shape[rank - 2] % r == 0) rows = r;
    ir::Shape groups = t.shape;
    groups.rank -= 1;
    if (rank >= 2) groups.dims[size_t(rank - 2)] /= rows;
    loop_nest(groups, [&](const Index &g) {
      Index base = g;
      if (rank >= 2) base.back() = b_.CreateMul(base.back(), b_.getInt64(rows));
      b_.CreateAlignedStore(group_value(base, rows), array_element_ptr(into, t, lane_index(base, 0, b_.getInt64(0), b_)), llvm::Align(4));
    });
  }

  // Whether v is computed in rows of lanes, and how many: lane_count, but bytes only where
  // what v is computed from puts lanes together from other shapes (a reshape, a broadcast
  // along the lanes, a cast from wider lanes: Q5_0's fifth bits; a cast between u8 and i8
  // passes the question on, as the prefill's byte dot reads those quants). Element by element,
  // LLVM built those a byte at a time; but plain masks and shifts of loaded bytes (Q4_K's and
  // Q6_K's quants) it vectorizes across rows as wide as the CPU's, and rows of 16 bytes made
  // those kernels slower (bench/RESULTS.md, 2026-12-05, "... Q5_0 and Q5_1's fifth bits as
  // byte lanes").
  unsigned lanes_for(ir::ValueId v) {
    const ir::Type &t = fn_.type(v);
    const unsigned lanes = lane_count(t);
    return lanes && dtype_bytes(t.elem) == 1 && !regroups_lanes(v, true) ? 0 : lanes;
  }
  bool regroups_lanes(ir::ValueId v, bool root) {
    if (state_[size_t(v)].array || (!root && plan_.storage[size_t(v)] != Storage::Fused)) return false;
    const ir::Op *def = plan_.def[size_t(v)];
    if (!def) return false;
    if (!root) {  // a fused value's answer does not change: each is found once, however often it is shared
      if (regroups_.size() < fn_.values.size()) regroups_.resize(fn_.values.size(), -1);
      if (regroups_[size_t(v)] >= 0) return regroups_[size_t(v)];
      regroups_[size_t(v)] = int8_t(regroups_lanes_of(*def, v));
      return regroups_[size_t(v)] != 0;
    }
    return regroups_lanes_of(*def, v);
  }
  bool regroups_lanes_of(const ir::Op &def, ir::ValueId v) {
    const ir::Type &t = fn_.type(v);
    switch (def.kind) {
      case OpKind::Reshape: return true;
      case OpKind::Cast:  // between bytes (u8 quants read as i8 by a byte dot) it asks its operand
        if (dtype_bytes(fn_.type(def.operands[0]).elem) != dtype_bytes(t.elem)) return true;
        break;
      case OpKind::Broadcast: {
        const ir::Type &in = fn_.type(def.operands[0]);
        if (in.shape.rank == t.shape.rank && in.shape[in.shape.rank - 1] == 1 && t.shape[t.shape.rank - 1] > 1) return true;
        break;
      }
      default:
        if (!ir::is_elementwise(def.kind) && !ir::is_view(def.kind)) return false;
    }
    for (ir::ValueId operand : def.operands)
      if (!fn_.type(operand).is_ptr && regroups_lanes(operand, false)) return true;
    return false;
  }

  // Rows base .. base + rows - 1 of v, lanes and all, as one vector.
  llvm::Value *lane_group(ir::ValueId v, const Index &base, unsigned rows, unsigned lanes) {
    const ir::Type &t = fn_.type(v);
    if (llvm::AllocaInst *array = state_[size_t(v)].array)
      return b_.CreateAlignedLoad(group_type(t.elem, rows, lanes), array_element_ptr(array, t, lane_index(base, 0, b_.getInt64(0), b_)), llvm::Align(4));
    const ir::Op *def = plan_.def[size_t(v)];
    if (def && plan_.storage[size_t(v)] == Storage::Fused) return lane_group_of(*def, base, rows, lanes);
    return group_of_elements(t.elem, rows, lanes, base, [&](const Index &idx) { return element(v, idx); });
  }

  template <class F>
  llvm::Value *group_of_elements(DType elem, unsigned rows, unsigned lanes, const Index &base, F &&value) {
    llvm::Value *r = llvm::PoisonValue::get(group_type(elem, rows, lanes));
    for (unsigned i = 0; i < rows * lanes; ++i) r = b_.CreateInsertElement(r, value(lane_index(base, i / lanes, b_.getInt64(i % lanes), b_)), uint64_t(i));
    return r;
  }

  // Each of `row_values` (a vector of one element per row) repeated across its row's lanes.
  llvm::Value *spread_rows(llvm::Value *row_values, unsigned rows, unsigned lanes) {
    std::vector<int> mask;
    for (unsigned i = 0; i < rows * lanes; ++i) mask.push_back(int(i / lanes));
    return b_.CreateShuffleVector(row_values, mask);
  }
  // One row's lanes repeated `rows` times.
  llvm::Value *repeat_row(llvm::Value *row, unsigned rows, unsigned lanes) {
    if (rows == 1) return row;
    std::vector<int> mask;
    for (unsigned i = 0; i < rows * lanes; ++i) mask.push_back(int(i % lanes));
    return b_.CreateShuffleVector(row, mask);
  }

  // The group of op's result at `base`: its op on the operands' groups where it has a vector
  // form, otherwise element by element.
  llvm::Value *lane_group_of(const ir::Op &op, const Index &base, unsigned rows, unsigned lanes) {
    const ir::Type &t = fn_.type(op.results[0]);
    const int rank = t.shape.rank;
    auto same_type = [&](ir::ValueId operand) {
      const ir::Type &o = fn_.type(operand);
      return !o.is_ptr && o.elem == t.elem && o.shape.rank == rank && o.shape[rank - 1] == t.shape[rank - 1];
    };
    switch (op.kind) {
      case OpKind::Broadcast: {
        const ir::Type &in = fn_.type(op.operands[0]);
        if (in.shape.rank != rank || in.is_ptr) break;
        Index mapped(base.size());
        for (size_t d = 0; d < base.size(); ++d) mapped[d] = in.shape[int(d)] == 1 ? b_.getInt64(0) : base[d];
        const bool rows_stretched = rows > 1 && in.shape[rank - 2] == 1;
        if (in.shape[rank - 1] == 1) {  // along the lanes: one element a row
          if (rows == 1 || rows_stretched) return b_.CreateVectorSplat(rows * lanes, element(op.operands[0], lane_index(mapped, 0, b_.getInt64(0), b_)));
          llvm::Value *per_row = llvm::PoisonValue::get(group_type(t.elem, rows, 1));
          for (unsigned r = 0; r < rows; ++r)
            per_row = b_.CreateInsertElement(per_row, element(op.operands[0], lane_index(mapped, r, b_.getInt64(0), b_)), uint64_t(r));
          return spread_rows(per_row, rows, lanes);
        }
        if (rows_stretched) return repeat_row(lane_group(op.operands[0], mapped, 1, lanes), rows, lanes);
        return lane_group(op.operands[0], mapped, rows, lanes);
      }
      case OpKind::ExpandDims: {
        const int axis = int(op.ints[0]);
        if (axis >= rank - 1 || (axis == rank - 2 && rows != 1)) break;
        Index mapped = base;
        mapped.erase(mapped.begin() + axis);
        return lane_group(op.operands[0], mapped, rows, lanes);
      }
      case OpKind::Add: case OpKind::Sub: case OpKind::Mul: case OpKind::Min: case OpKind::Max:
      case OpKind::And: case OpKind::Or: case OpKind::Xor: case OpKind::Shl: case OpKind::Shr:
        // The shared element semantics, on vectors: for f32 and i32 these are the plain IR ops
        // (the bitwise ones on i32 only). A shift by a different amount a lane (Q5_0's fifth
        // bits, bit j of qh's byte in lane j) is one vpsrlvd a row group; element by element,
        // LLVM rebuilt part of each vector from scalar shifts.
        if (!same_type(op.operands[0]) || !same_type(op.operands[1])) break;
        return el_.elementwise(op, fn_, [&](size_t i) { return lane_group(op.operands[i], base, rows, lanes); });
      case OpKind::Cast: {
        const ir::Type &from = fn_.type(op.operands[0]);
        if (from.is_ptr) break;
        if (t.elem == DType::F32 && from.elem == DType::I32)
          return b_.CreateSIToFP(lane_group(op.operands[0], base, rows, lanes), group_type(DType::F32, rows, lanes));
        // Between i32 and byte lanes (bits spread on i32 lanes, narrowed to bytes): one
        // truncation or extension of the group.
        auto integer_lanes = [](DType d) { return d == DType::I32 || d == DType::U8 || d == DType::I8; };
        if (integer_lanes(t.elem) && integer_lanes(from.elem))
          return b_.CreateIntCast(lane_group(op.operands[0], base, rows, lanes), group_type(t.elem, rows, lanes), !is_unsigned(from.elem));
        break;
      }
      case OpKind::Reshape:
        if (llvm::Value *group = reshaped_lane_group(op, base, rows, lanes)) return group;
        break;
      case OpKind::Load: {
        // Unmasked, consecutive along the last axis: a vector load a row, where element by
        // element each byte was a load and an insert.
        if (op.operands.size() != 1 || checks_ || storage_type(t.elem) != compute_type(t.elem) || last_axis_stride(op.operands[0]) != 1) break;
        std::vector<llvm::Value *> row_values;
        for (unsigned r = 0; r < rows; ++r)
          row_values.push_back(b_.CreateAlignedLoad(group_type(t.elem, 1, lanes), element(op.operands[0], lane_index(base, r, b_.getInt64(0), b_)),
                                                    llvm::Align(uint64_t(dtype_bytes(t.elem)))));
        return rows == 1 ? row_values[0] : llvm::concatenateVectors(b_, row_values);
      }
      default: break;
    }
    return group_of_elements(t.elem, rows, lanes, base, [&](const Index &idx) { return compute(op, idx); });
  }

  // The group of a reshape's result at `base` (rows x lanes, row-major as the reshape keeps
  // its operand) from whole rows of its operand, where the operand is in lanes that divide
  // ours: Q5_0's fifth bits, [BN, 2, 8] bytes, become each block's row of 16. The group's
  // first element is a multiple of rows * lanes, so it starts at an operand row that is a
  // multiple of the rows it needs; those come a run of the operand's row axis at a time.
  // nullptr where the shapes do not allow it.
  llvm::Value *reshaped_lane_group(const ir::Op &op, const Index &base, unsigned rows, unsigned lanes) {
    const ir::Type &t = fn_.type(op.results[0]), &in = fn_.type(op.operands[0]);
    const unsigned in_lanes = lane_count(in);
    if (!in_lanes || in.elem != t.elem || lanes % in_lanes) return nullptr;
    const int in_rank = in.shape.rank;
    const int64_t needed = int64_t(rows) * (lanes / in_lanes), run = in_rank >= 2 ? in.shape[in_rank - 2] : 1;
    const int64_t chunk = std::min(needed, run);
    if (std::max(needed, run) % chunk) return nullptr;
    llvm::Value *first_row = b_.CreateUDiv(linear(lane_index(base, 0, b_.getInt64(0), b_), t.shape), b_.getInt64(in_lanes));
    std::vector<llvm::Value *> parts;
    for (int64_t k = 0; k < needed; k += chunk) {
      llvm::Value *row = b_.CreateAdd(first_row, b_.getInt64(k));
      Index at(size_t(std::max(0, in_rank - 1)));
      for (int d = in_rank - 2; d >= 0; --d) {
        at[size_t(d)] = b_.CreateURem(row, b_.getInt64(in.shape[d]));
        row = b_.CreateUDiv(row, b_.getInt64(in.shape[d]));
      }
      parts.push_back(lane_group(op.operands[0], at, unsigned(chunk), in_lanes));
    }
    return parts.size() == 1 ? parts[0] : llvm::concatenateVectors(b_, parts);
  }

  void emit_op(const ir::Op &op) {
    switch (op.kind) {
      case OpKind::Store:
      case OpKind::AtomicAdd: case OpKind::AtomicMax: case OpKind::AtomicMin: case OpKind::AtomicXchg: case OpKind::AtomicCas:
        return emit_store(op);
      case OpKind::ScanSum: case OpKind::ScanMax: case OpKind::ScanMin:
        return emit_scan(op);
      case OpKind::DevicePrint:
        return emit_print(op);
      case OpKind::DeviceAssert:
        return emit_assert(op);
      case OpKind::Prefetch:
        return emit_prefetch(op);
      case OpKind::Dot:
      case OpKind::ScaledDot:
        return emit_dot(op);
      case OpKind::Dot4:
        return emit_dot4(op);
      case OpKind::For:
        return emit_for(op);
      case OpKind::If:
        return emit_if(op);
      case OpKind::Yield:
        return;  // handled by the parent op
      default:
        break;
    }
    ir::ValueId v = op.results.at(0);
    const ir::Type &t = fn_.type(v);
    switch (plan_.storage[size_t(v)]) {
      case Storage::Fused:
        return;
      case Storage::Scalar:
        if (!state_[size_t(v)].scalar) state_[size_t(v)].scalar = compute(op, {});  // else reduced in its input's loop
        return;
      case Storage::Array: {
        llvm::AllocaInst *a = target_array(v, ir::op_name(op.kind));
        if (plan_.reductions_in_loop[size_t(v)].empty() && (copy_rows_of_load(v, a) || lookup_bytes_in_table(op, a))) {
          state_[size_t(v)].array = a;
          return;
        }
        const unsigned lanes = lanes_for(v);
        if (lanes && plan_.reductions_in_loop[size_t(v)].empty()) {
          store_lane_groups(t, a, lanes, [&](const Index &base, unsigned rows) { return lane_group_of(op, base, rows, lanes); });
          state_[size_t(v)].array = a;
          return;
        }
        // Full reductions of this value ride along in the loop that writes it.
        std::vector<Accumulator> riders;
        for (const ir::Op *r : plan_.reductions_in_loop[size_t(v)]) riders.push_back(start_reduction(*r));
        loop_nest(t.shape, [&](const Index &idx) {
          llvm::Value *x = compute(op, idx);
          b_.CreateStore(x, array_element_ptr(a, t, idx));
          for (const Accumulator &r : riders) accumulate(r, x, idx[0]);
        });
        for (const Accumulator &r : riders) state_[size_t(r.op->results[0])].scalar = finish_reduction(r);
        state_[size_t(v)].array = a;
        return;
      }
    }
  }

  // One llvm.prefetch (read, keep in all levels) per 64-byte line along the last axis: the
  // pointers are assumed contiguous there, as in the loads a prefetch runs ahead of. Other
  // axes are walked in full.
  void emit_prefetch(const ir::Op &op) {
    const ir::Type &pt = fn_.type(op.operands[0]);
    const int64_t per_line = std::max<int64_t>(1, 64 / dtype_bytes(pt.elem));
    llvm::Function *prefetch = llvm::Intrinsic::getDeclaration(&m_, llvm::Intrinsic::prefetch, {b_.getPtrTy()});
    auto line = [&](const Index &idx) {
      b_.CreateCall(prefetch, {element(op.operands[0], idx), b_.getInt32(0), b_.getInt32(3), b_.getInt32(1)});
    };
    if (pt.shape.rank == 0) return line({});
    ir::Shape outer = pt.shape;
    const int64_t last = outer[outer.rank - 1];
    outer.rank -= 1;
    loop_nest(outer, [&](const Index &idx) {
      loop((last + per_line - 1) / per_line, [&](llvm::Value *i) {
        Index full = idx;
        full.push_back(b_.CreateMul(i, b_.getInt64(per_line), "", true, true));
        line(full);
      });
    });
  }

  // Stores and atomics: operands (ptrs, values..., [mask]), one value (compare and value for cas).
  void emit_store(const ir::Op &op) {
    const ir::Type &pt = fn_.type(op.operands[0]);
    bool atomic = ir::is_atomic(op.kind);
    const size_t values = op.kind == OpKind::AtomicCas ? 2 : 1;
    const bool masked = op.operands.size() == values + 2;
    llvm::AllocaInst *old = nullptr;
    if (atomic && pt.shape.rank > 0) old = alloca_array(fn_.type(op.results[0]), "atomic.old");
    llvm::AllocaInst *old_scalar = atomic && !old ? alloca_slot(compute_type(pt.elem), "atomic.old") : nullptr;
    if (!atomic && !checks_ && pt.shape.rank > 0 && pt.shape[pt.shape.rank - 1] >= kWholeRowStore && (masked || row_vector_store_applies(op)))
      return emit_store_by_rows(op);
    if (!atomic && !masked && store_lane_rows(op)) return;
    loop_nest(pt.shape, [&](const Index &idx) {
      llvm::Value *old_slot = !atomic ? nullptr : old ? array_element_ptr(old, fn_.type(op.results[0]), idx) : old_scalar;
      auto body = [&] {
        llvm::Value *p = element(op.operands[0], idx);
        auto access = [&] {
          llvm::Value *v = element(op.operands[values], idx);
          if (!atomic) {
            b_.CreateStore(to_storage(v, pt.elem), p);
            return;
          }
          llvm::Value *compare = values == 2 ? element(op.operands[1], idx) : nullptr;
          b_.CreateStore(emit_atomic_update(b_, op.kind, pt.elem, p, v, compare), old_slot);
        };
        // Checked mode: an address outside its argument is skipped (after the violation is recorded).
        if (checks_) when(checks_->in_bounds(op, op.operands[0], p, dtype_bytes(pt.elem)), access);
        else access();
      };
      if (!masked) return body();
      if (atomic) b_.CreateStore(llvm::Constant::getNullValue(compute_type(pt.elem)), old_slot);  // masked off: 0
      when(element(op.operands[values + 1], idx), body);
    });
    if (old) state_[size_t(op.results[0])].array = old;
    if (old_scalar) state_[size_t(op.results[0])].scalar = b_.CreateLoad(compute_type(pt.elem), old_scalar);
  }

  // An unmasked store of a value in rows of lanes (lane_count) that is computed where it is
  // stored, to addresses consecutive along the last axis: each row's lanes computed as one
  // vector (lane_group) and stored as one. False (nothing emitted) where it does not apply.
  bool store_lane_rows(const ir::Op &op) {
    const ir::Type &pt = fn_.type(op.operands[0]), &vt = fn_.type(op.operands[1]);
    const unsigned lanes = lanes_for(op.operands[1]);
    if (op.kind != OpKind::Store || op.operands.size() != 2 || checks_ || !lanes || state_[size_t(op.operands[1])].array || vt.elem != pt.elem ||
        !(vt.shape == pt.shape) || storage_type(pt.elem) != compute_type(pt.elem) || last_axis_stride(op.operands[0]) != 1)
      return false;
    ir::Shape rows = pt.shape;
    rows.rank -= 1;
    loop_nest(rows, [&](const Index &row) {
      llvm::Value *first = element(op.operands[0], lane_index(row, 0, b_.getInt64(0), b_));
      b_.CreateAlignedStore(lane_group(op.operands[1], row, 1, lanes), first, llvm::Align(uint64_t(dtype_bytes(pt.elem))));
    });
    return true;
  }

  // An inclusive scan: along the axis, for each position of the other axes, a running
  // combine in the compute type (f32 for f16 and bf16), each output rounded to the element type.
  // The first element starts the run, so max and min need no identity and pass NaNs over
  // exactly as maxnum / minnum do.
  // A store row by row. Where the pointers of a row are consecutive (their last-axis stride
  // is one element, last_axis_stride) and the values lie in an array of the stored type, a
  // row is one vector store. Under a mask, a row whose mask is true everywhere (every row of a
  // tile but those past the matrix's edge) is stored so, or element by element without
  // branches; only a row the mask cuts is stored element by element under its mask. Per
  // element, a branch on each mask bit kept every output tile's stores scalar.
  static constexpr int64_t kWholeRowStore = 4;
  // A row of `width` elements of `bytes` each as vectors of one register (a loop over them where
  // there are many) and a tail in power-of-two pieces: chunk(first element, elements). One
  // vector type per row would reach LLVM as <4096 x float> for a long row, whose selection
  // took minutes.
  template <class F>
  void row_in_vectors(int64_t width, int64_t bytes, F &&chunk) {
    const int64_t lanes = std::max<int64_t>(1, int64_t(host_dot_machine().lanes) * 4 / bytes), full = width / lanes;
    constexpr int64_t kUnrolled = 4;
    if (full > kUnrolled) loop(full, [&](llvm::Value *i) { chunk(b_.CreateMul(i, b_.getInt64(lanes)), lanes); });
    else
      for (int64_t i = 0; i < full; ++i) chunk(b_.getInt64(i * lanes), lanes);
    for (int64_t at = full * lanes, piece = lanes / 2; at < width; piece /= 2)
      if (width - at >= piece) chunk(b_.getInt64(at), piece), at += piece;
  }
  bool row_vector_store_applies(const ir::Op &op) {
    const ir::Type &pt = fn_.type(op.operands[0]);
    return state_[size_t(op.operands[1])].array && compute_type(pt.elem) == storage_type(pt.elem) && last_axis_stride(op.operands[0]) == 1;
  }
  void emit_store_by_rows(const ir::Op &op) {
    const ir::Type &pt = fn_.type(op.operands[0]);
    const bool masked = op.operands.size() == 3;
    const int last = pt.shape.rank - 1;
    const int64_t width = pt.shape[last];
    const bool as_vector = row_vector_store_applies(op);
    ir::Shape rows = pt.shape;
    rows.rank -= 1;
    auto at = [](const Index &row, llvm::Value *i) {
      Index idx = row;
      idx.push_back(i);
      return idx;
    };
    auto store = [&](const Index &idx) { b_.CreateStore(to_storage(element(op.operands[1], idx), pt.elem), element(op.operands[0], idx)); };
    auto whole_row = [&](const Index &row) {
      if (!as_vector) return loop(width, [&](llvm::Value *i) { store(at(row, i)); });
      llvm::Type *element_type = storage_type(pt.elem);
      const int64_t bytes = int64_t(m_.getDataLayout().getTypeAllocSize(element_type));
      const ir::ValueId v = op.operands[1];
      llvm::Value *first = element(op.operands[0], at(row, b_.getInt64(0)));
      row_in_vectors(width, bytes, [&](llvm::Value *i, int64_t n) {
        auto *vector = llvm::FixedVectorType::get(element_type, unsigned(n));
        llvm::Value *values = b_.CreateAlignedLoad(vector, array_element_ptr(state_[size_t(v)].array, fn_.type(v), at(row, i)), llvm::Align(bytes));
        b_.CreateAlignedStore(values, b_.CreateInBoundsGEP(element_type, first, i), llvm::Align(bytes));
      });
    };
    llvm::AllocaInst *whole = masked ? alloca_slot(b_.getInt1Ty(), "store.whole_row") : nullptr;
    loop_nest(rows, [&](const Index &row) {
      if (!masked) return whole_row(row);
      b_.CreateStore(b_.getTrue(), whole);
      loop(width, [&](llvm::Value *i) {
        b_.CreateStore(b_.CreateAnd(b_.CreateLoad(b_.getInt1Ty(), whole), element(op.operands[2], at(row, i))), whole);
      });
      llvm::BasicBlock *full = llvm::BasicBlock::Create(ctx_, "store.row", current_function());
      llvm::BasicBlock *cut = llvm::BasicBlock::Create(ctx_, "store.row.masked", current_function());
      llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "store.row.end", current_function());
      b_.CreateCondBr(b_.CreateLoad(b_.getInt1Ty(), whole), full, cut);
      b_.SetInsertPoint(full);
      whole_row(row);
      b_.CreateBr(done);
      b_.SetInsertPoint(cut);
      loop(width, [&](llvm::Value *i) { when(element(op.operands[2], at(row, i)), [&] { store(at(row, i)); }); });
      b_.CreateBr(done);
      b_.SetInsertPoint(done);
    });
  }

  // How far apart (in elements) consecutive elements of v's last axis are, where v is an
  // integer or pointer block made from aranges, broadcasts, constants, additions, widening
  // casts and multiplication by a constant; nullopt for anything else. A widening cast is
  // taken to keep the stride: an i32 index that wrapped inside one row would address 2^32
  // elements away, outside any buffer.
  std::optional<int64_t> last_axis_stride(ir::ValueId v) {
    const ir::Type &t = fn_.type(v);
    if (t.shape.rank == 0) return 0;
    if (state_[size_t(v)].array) return std::nullopt;
    const ir::Op *def = plan_.def[size_t(v)];
    if (!def) return std::nullopt;
    const int last = t.shape.rank - 1;
    auto operand = [&](size_t i) { return last_axis_stride(def->operands[i]); };
    switch (def->kind) {
      case OpKind::Constant: return 0;
      case OpKind::Arange: return 1;
      case OpKind::Broadcast: {
        const ir::Shape &in = fn_.type(def->operands[0]).shape;
        if (in.rank == 0 || in[in.rank - 1] == 1) return 0;
        return operand(0);
      }
      case OpKind::ExpandDims: return def->ints[0] == last ? std::optional<int64_t>(0) : operand(0);
      case OpKind::Reshape: {  // row-major order kept: the same last axis is the same rows
        const ir::Shape &in = fn_.type(def->operands[0]).shape;
        if (in.rank == 0) return 0;
        return in[in.rank - 1] == t.shape[last] ? operand(0) : std::nullopt;
      }
      case OpKind::Add:
      case OpKind::Sub:
      case OpKind::PtrAdd: {
        std::optional<int64_t> a = operand(0), b = operand(1);
        if (!a || !b) return std::nullopt;
        return def->kind == OpKind::Sub ? *a - *b : *a + *b;
      }
      case OpKind::Mul: {
        std::optional<int64_t> a = operand(0), b = operand(1);
        if (a == 0 && b == 0) return 0;
        if (std::optional<int64_t> c = constant_int(def->operands[0]); c && b) return *c * *b;
        if (std::optional<int64_t> c = constant_int(def->operands[1]); c && a) return *c * *a;
        return std::nullopt;
      }
      case OpKind::Cast: {
        const DType from = fn_.type(def->operands[0]).elem, to = t.elem;
        const bool widening = is_integer(from) && is_integer(to) && dtype_bytes(to) >= dtype_bytes(from);
        return widening ? operand(0) : std::nullopt;
      }
      default: return std::nullopt;
    }
  }
  // The integer every element of v is, where v is a constant or a broadcast of one.
  std::optional<int64_t> constant_int(ir::ValueId v) {
    const ir::Op *def = plan_.def[size_t(v)];
    while (def && def->kind == OpKind::Broadcast && !state_[size_t(v)].array) v = def->operands[0], def = plan_.def[size_t(v)];
    if (!def || def->kind != OpKind::Constant || state_[size_t(v)].array || !is_integer(fn_.type(v).elem)) return std::nullopt;
    return def->ints.empty() ? 0 : def->ints[0];
  }

  void emit_scan(const ir::Op &op) {
    ir::ValueId v = op.results[0];
    const ir::Type &t = fn_.type(v);
    const int axis = int(op.ints[0]);
    const bool reverse = op.ints[1] != 0, fp = is_float(t.elem), sign = !is_unsigned(t.elem);
    const int64_t n = t.shape[axis];
    llvm::AllocaInst *out = target_array(v, "scan");
    llvm::AllocaInst *acc = alloca_slot(compute_type(t.elem), "scan.acc");
    ir::Shape outer = t.shape;
    outer[axis] = 1;
    loop_nest(outer, [&](const Index &o) {
      loop(n, [&](llvm::Value *i) {
        Index at = o;
        at[size_t(axis)] = reverse ? b_.CreateSub(b_.getInt64(n - 1), i) : i;
        llvm::Value *x = element(op.operands[0], at), *prior = b_.CreateLoad(compute_type(t.elem), acc), *next = nullptr;
        switch (op.kind) {
          case OpKind::ScanSum: next = fp ? b_.CreateFAdd(prior, x) : b_.CreateAdd(prior, x); break;
          case OpKind::ScanMax:
            next = b_.CreateBinaryIntrinsic(fp ? llvm::Intrinsic::maxnum : sign ? llvm::Intrinsic::smax : llvm::Intrinsic::umax, prior, x);
            break;
          default:
            next = b_.CreateBinaryIntrinsic(fp ? llvm::Intrinsic::minnum : sign ? llvm::Intrinsic::smin : llvm::Intrinsic::umin, prior, x);
        }
        next = b_.CreateSelect(b_.CreateICmpEQ(i, b_.getInt64(0)), x, next);
        b_.CreateStore(next, acc);
        b_.CreateStore(fp ? round_to(next, t.elem) : next, array_element_ptr(out, t, at));
      });
    });
    state_[size_t(v)].array = out;
  }

  // This program's coordinates as an i32[3] on the stack, for the run-time helpers.
  llvm::Value *program_id_array() {
    llvm::AllocaInst *pid = alloca_slot(llvm::ArrayType::get(b_.getInt32Ty(), 3), "pid");
    for (int i = 0; i < 3; ++i) b_.CreateStore(pid_[size_t(i)], b_.CreateConstInBoundsGEP2_32(pid->getAllocatedType(), pid, 0, unsigned(i)));
    return pid;
  }

  // device_print: each operand's elements as 8-byte words in a stack array, described by
  // kPrintOperandWords words each (device_debug.h), then one call that writes the line.
  void emit_print(const ir::Op &op) {
    auto *i64 = b_.getInt64Ty();
    const unsigned count = unsigned(op.operands.size());
    llvm::AllocaInst *desc = alloca_slot(llvm::ArrayType::get(i64, std::max(1u, count) * kPrintOperandWords), "print.operands");
    auto word = [&](unsigned operand, unsigned w) { return b_.CreateConstInBoundsGEP2_32(desc->getAllocatedType(), desc, 0, operand * kPrintOperandWords + w); };
    for (unsigned k = 0; k < count; ++k) {
      const ir::Type &t = fn_.type(op.operands[k]);
      llvm::AllocaInst *data = alloca_slot(llvm::ArrayType::get(i64, uint64_t(t.shape.numel())), "print.values");
      loop_nest(t.shape, [&](const Index &idx) {
        llvm::Value *x = element(op.operands[k], idx);
        llvm::Value *w = is_float(t.elem) ? b_.CreateBitCast(b_.CreateFPExt(x, b_.getDoubleTy()), i64)
                                          : is_unsigned(t.elem) ? b_.CreateZExt(x, i64) : b_.CreateSExt(x, i64);
        b_.CreateStore(w, b_.CreateInBoundsGEP(i64, data, t.shape.rank ? linear(idx, t.shape) : b_.getInt64(0)));
      });
      b_.CreateStore(b_.getInt64(uint64_t(t.elem)), word(k, 0));
      b_.CreateStore(b_.getInt64(uint64_t(t.shape.rank)), word(k, 1));
      for (int d = 0; d < 4; ++d) b_.CreateStore(b_.getInt64(uint64_t(d < t.shape.rank ? t.shape[d] : 1)), word(k, unsigned(2 + d)));
      b_.CreateStore(b_.CreatePtrToInt(data, i64), word(k, 6));
    }
    auto *ptr = b_.getPtrTy();
    llvm::FunctionCallee print = m_.getOrInsertFunction(kDevicePrintSymbol, llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr, b_.getInt32Ty(), ptr}, false));
    b_.CreateCall(print, {b_.CreateGlobalString(op.text, "print.label"), program_id_array(), b_.getInt32(count), desc});
  }

  // device_assert: the first false element (row-major) is reported with its index and the
  // program returns; the launch throws once every program has run (kernel.cpp).
  void emit_assert(const ir::Op &op) {
    const ir::Type &t = fn_.type(op.operands[0]);
    auto *i64 = b_.getInt64Ty();
    llvm::AllocaInst *failed = alloca_slot(b_.getInt1Ty(), "assert.failed");
    llvm::AllocaInst *where = alloca_slot(llvm::ArrayType::get(i64, uint64_t(std::max(1, t.shape.rank))), "assert.index");
    b_.CreateStore(b_.getFalse(), failed);
    loop_nest(t.shape, [&](const Index &idx) {
      llvm::Value *first_failure = b_.CreateAnd(b_.CreateNot(element(op.operands[0], idx)), b_.CreateNot(b_.CreateLoad(b_.getInt1Ty(), failed)));
      when(first_failure, [&] {
        for (size_t d = 0; d < idx.size(); ++d) b_.CreateStore(idx[d], b_.CreateConstInBoundsGEP2_32(where->getAllocatedType(), where, 0, unsigned(d)));
        b_.CreateStore(b_.getTrue(), failed);
      });
    });
    llvm::BasicBlock *fail = llvm::BasicBlock::Create(ctx_, "assert.fail", current_function());
    llvm::BasicBlock *pass = llvm::BasicBlock::Create(ctx_, "assert.pass", current_function());
    b_.CreateCondBr(b_.CreateLoad(b_.getInt1Ty(), failed), fail, pass);
    b_.SetInsertPoint(fail);
    auto *ptr = b_.getPtrTy();
    llvm::FunctionCallee report =
        m_.getOrInsertFunction(kDeviceAssertSymbol, llvm::FunctionType::get(b_.getVoidTy(), {ptr, ptr, ptr, ptr, b_.getInt32Ty()}, false));
    b_.CreateCall(report, {launch_args_, b_.CreateGlobalString(op.text, "assert.message"), program_id_array(), where, b_.getInt32(uint32_t(t.shape.rank))});
    b_.CreateRetVoid();
    b_.SetInsertPoint(pass);
  }

  // c = acc + a @ b (scaled_dot: acc + (a @ b) * scale[n]), accumulating each row of c with
  // the inner loop over n contiguous.
  void emit_dot(const ir::Op &op) {
    const ir::Type &ct = fn_.type(op.results[0]);
    const ir::Type &at = fn_.type(op.operands[0]);
    llvm::AllocaInst *c = target_array(op.results[0], "dot");
    int64_t M = ct.shape[0], N = ct.shape[1], K = at.shape[1];
    if (!is_float(ct.elem) && emit_int_dot_tiles(op, c, M, N, K)) {
      state_[size_t(op.results[0])].array = c;
      return;
    }
    if (state_[size_t(op.operands[2])].array != c) materialize(op.operands[2], c);
    if (op.kind == OpKind::ScaledDot) {
      // No fast path: the products into zeros, then added scaled.
      llvm::AllocaInst *products = alloca_array(ct, "dot.unscaled");
      b_.CreateMemSet(products, b_.getInt8(0), uint64_t(ct.shape.numel() * 4), llvm::MaybeAlign(64));
      emit_dot_i8(op, products, M, N, K);
      loop_nest(ct.shape, [&](const Index &idx) {
        llvm::Value *slot = array_element_ptr(c, ct, idx);
        llvm::Value *scaled = b_.CreateMul(b_.CreateLoad(b_.getInt32Ty(), array_element_ptr(products, ct, idx)), element(op.operands[3], {b_.getInt64(0), idx[1]}));
        b_.CreateStore(b_.CreateAdd(b_.CreateLoad(b_.getInt32Ty(), slot), scaled), slot);
      });
    } else if (is_float(ct.elem)) {
      emit_dot_strips(op, c, M, N, K);
    } else {
      emit_dot_i8(op, c, M, N, K);
    }
    state_[size_t(op.results[0])].array = c;
  }

  // What the lowering knows of a byte operand's values: its type's signedness and proved bounds.
  ByteKind byte_kind(ir::ValueId v) {
    ByteKind kind = ByteKind::of_type(!is_unsigned(fn_.type(v).elem));
    if (const std::optional<ir::ValueRange> range = ranges_.of(v)) kind.lo = int(range->lo), kind.hi = int(range->hi);
    return kind;
  }
  bool is_zero_constant(ir::ValueId v) {
    const ir::Op *def = plan_.def[size_t(v)];
    return !state_[size_t(v)].array && def && def->kind == OpKind::Constant && (def->ints.empty() || def->ints[0] == 0) && def->fval == 0;
  }

  // The byte dot as register tiles (int_dot_tile.h) where the host has a fast path for its
  // operands; false (nothing emitted) where it has none. A is read from its array (copied
  // with rows padded to whole quads where K is not a multiple of 4); B is packed into quads
  // of k by columns, from the rows of the value it transposes where it is a trans() (a weight
  // tile's rows: each quad one 4-byte load), else byte by byte; an accumulator of zeros is
  // never written, the tiles store over C.
  bool emit_int_dot_tiles(const ir::Op &op, llvm::AllocaInst *c, int64_t M, int64_t N, int64_t K) {
    const ir::ValueId va = op.operands[0], vb = op.operands[1], vacc = op.operands[2];
    const std::optional<IntDotTilePlan> plan = plan_int_dot_tile(M, N, K, byte_kind(va), byte_kind(vb), int_dot_);
    if (!plan || (plan->flip_b && op.kind == OpKind::ScaledDot)) return false;  // a flipped B's correction is not scaled: no format asks
    auto *i8 = b_.getInt8Ty(), *i32 = b_.getInt32Ty();
    const int64_t quads = (K + 3) / 4, columns = padded_columns(N);
    const bool c_is_zero = state_[size_t(vacc)].array != c && is_zero_constant(vacc);
    if (!c_is_zero && state_[size_t(vacc)].array != c) materialize(vacc, c);
    // A, rows of whole quads.
    const ir::Type &at = fn_.type(va);
    llvm::AllocaInst *a = state_[size_t(va)].array;
    if (!a || K % 4) {
      ir::Type padded = at;
      padded.shape.dims[1] = quads * 4;
      llvm::AllocaInst *rows = alloca_array(padded, "idot.a");
      if (K % 4) {
        b_.CreateMemSet(rows, b_.getInt8(0), uint64_t(padded.shape.numel()), llvm::MaybeAlign(64));
        loop_nest(at.shape, [&](const Index &idx) { b_.CreateStore(element(va, idx), array_element_ptr(rows, padded, idx)); });
      } else {
        materialize(va, rows);
      }
      a = rows;
    }
    // B packed: [quads][columns] i32.
    ir::Type packed_type;
    packed_type.elem = DType::I32;
    packed_type.shape.rank = 2;
    packed_type.shape.dims[0] = quads, packed_type.shape.dims[1] = columns;
    llvm::AllocaInst *packed = alloca_array(packed_type, "idot.b");
    if (K % 4 || N % 8) b_.CreateMemSet(packed, b_.getInt8(0), uint64_t(quads * columns * 4), llvm::MaybeAlign(64));
    const ir::Op *bdef = plan_.def[size_t(vb)];
    const bool transposed = !state_[size_t(vb)].array && bdef && bdef->kind == OpKind::Trans && plan_.storage[size_t(vb)] == Storage::Fused;
    if (transposed && K % 4 == 0) {
      // B = trans(W), W [N, K]: column n's quad q is W's bytes 4q .. 4q + 3 of row n.
      const ir::ValueId vw = bdef->operands[0];
      llvm::AllocaInst *w = state_[size_t(vw)].array;
      if (!w) {
        w = alloca_array(fn_.type(vw), "idot.w");
        materialize(vw, w);
      }
      loop(N, [&](llvm::Value *n) {
        loop(quads, [&](llvm::Value *q) {
          llvm::Value *from = b_.CreateInBoundsGEP(i8, w, b_.CreateAdd(b_.CreateMul(n, b_.getInt64(K)), b_.CreateMul(q, b_.getInt64(4))));
          llvm::Value *word = b_.CreateAlignedLoad(i32, from, llvm::Align(1));
          if (plan->flip_b) word = b_.CreateXor(word, b_.getInt32(int32_t(0x80808080u)));
          b_.CreateStore(word, b_.CreateInBoundsGEP(i32, packed, b_.CreateAdd(b_.CreateMul(q, b_.getInt64(columns)), n)));
        });
      });
    } else {
      loop_nest(fn_.type(vb).shape, [&](const Index &idx) {  // idx = {k, n}
        llvm::Value *q = b_.CreateUDiv(idx[0], b_.getInt64(4)), *t = b_.CreateURem(idx[0], b_.getInt64(4));
        llvm::Value *word = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(b_.CreateMul(q, b_.getInt64(columns)), idx[1]), b_.getInt64(4)), t);
        llvm::Value *byte = element(vb, idx);
        if (plan->flip_b) byte = b_.CreateXor(byte, b_.getInt8(int8_t(0x80)));
        b_.CreateStore(byte, b_.CreateInBoundsGEP(i8, packed, word));
      });
    }
    const int64_t a_stride = int64_t(llvm::cast<llvm::ArrayType>(a->getAllocatedType())->getNumElements()) / M;
    IntDotOperands operands{a, a_stride, packed, c, c_is_zero};
    if (op.kind == OpKind::ScaledDot) column_scales(op.operands[3], *plan, N, columns, operands);
    codegen::emit_int_dot_tiles(b_, m_, *plan, M, N, K, operands);
    if (plan->flip_b) take_flip_off(a, a_stride, c, M, N, K);
    return true;
  }

  // After a flipped B (IntDotTilePlan::flip_b): C[m][n] -= 128 * sum over k of A[m][k] (s8),
  // a row at a time in vectors (a scalar loop here LLVM vectorized across the rows, with a
  // byte insert for each of A's bytes and C's rows gathered and scattered).
  void take_flip_off(llvm::AllocaInst *a, int64_t a_stride, llvm::AllocaInst *c, int64_t M, int64_t N, int64_t K) {
    auto *i8 = b_.getInt8Ty(), *i32 = b_.getInt32Ty();
    llvm::AllocaInst *sum = alloca_slot(i32, "idot.flip.sum");
    loop(M, [&](llvm::Value *m) {
      b_.CreateStore(b_.getInt32(0), sum);
      llvm::Value *a_row = b_.CreateInBoundsGEP(i8, a, b_.CreateMul(m, b_.getInt64(a_stride)));
      row_in_vectors(K, 1, [&](llvm::Value *k, int64_t n) {
        llvm::Value *bytes = b_.CreateAlignedLoad(llvm::FixedVectorType::get(i8, unsigned(n)), b_.CreateInBoundsGEP(i8, a_row, k), llvm::Align(1));
        llvm::Value *wide = b_.CreateSExt(bytes, llvm::FixedVectorType::get(i32, unsigned(n)));
        b_.CreateStore(b_.CreateAdd(b_.CreateLoad(i32, sum), b_.CreateAddReduce(wide)), sum);
      });
      llvm::Value *correction = b_.CreateShl(b_.CreateLoad(i32, sum), 7);
      llvm::Value *c_row = b_.CreateInBoundsGEP(i32, c, b_.CreateMul(m, b_.getInt64(N)));
      row_in_vectors(N, 4, [&](llvm::Value *n0, int64_t n) {
        auto *vector = llvm::FixedVectorType::get(i32, unsigned(n));
        llvm::Value *at = b_.CreateInBoundsGEP(i32, c_row, n0);
        llvm::Value *fixed = b_.CreateSub(b_.CreateAlignedLoad(vector, at, llvm::Align(4)), b_.CreateVectorSplat(unsigned(n), correction));
        b_.CreateAlignedStore(fixed, at, llvm::Align(4));
      });
    });
  }

  // A scaled_dot's scales by column, padded to whole vectors with zeros: each an i16 pair
  // (the scale in both halves, for vpmaddwd to widen the i16 pair sums by) where the
  // products widen in i16 and the scales' proved bounds fit i16, else the i32 scale itself.
  void column_scales(ir::ValueId scale, const IntDotTilePlan &plan, int64_t N, int64_t columns, IntDotOperands &operands) {
    const std::optional<ir::ValueRange> range = ranges_.of(scale);
    operands.scales_as_i16_pairs = plan.kind == IntDotTilePlan::Kind::Maddubs && range && range->lo >= -32768 && range->hi <= 32767;
    llvm::AllocaInst *scales = alloca_slot(llvm::ArrayType::get(b_.getInt32Ty(), uint64_t(columns)), "idot.scales");
    if (N % 8) b_.CreateMemSet(scales, b_.getInt8(0), uint64_t(columns * 4), llvm::MaybeAlign(4));
    loop(N, [&](llvm::Value *n) {
      llvm::Value *s = element(scale, {b_.getInt64(0), n});
      if (operands.scales_as_i16_pairs) s = b_.CreateOr(b_.CreateAnd(s, b_.getInt32(0xffff)), b_.CreateShl(s, b_.getInt32(16)));
      b_.CreateStore(s, b_.CreateInBoundsGEP(b_.getInt32Ty(), scales, n));
    });
    operands.column_scales = scales;
  }

  // C[M,N] += A[M,K] . B[K,N] in f32, as register tiles of C (dot_tile.h): each tile's
  // accumulators are vectors carried through the k loop in registers; each k loads the tile's
  // part of row k of B once, as vectors, and adds a[m][k] * B[k] into every row of the tile.
  // Strips of rows are the outer loop, so a strip's elements of A stay in cache while its
  // panels of columns take turns (the scalar form C[m][n] += a * b, with C in memory, cost a
  // load and a store of C for every multiply-add; one row of C by all of N loaded more of B
  // than it multiplied and kept too few accumulators to hide the FMA's latency).
  void emit_dot_strips(const ir::Op &op, llvm::AllocaInst *c, int64_t M, int64_t N, int64_t K) {
    const ir::Type &ct = fn_.type(op.results[0]);
    const ir::Type &bt = fn_.type(op.operands[1]);
    llvm::Type *f32 = b_.getFloatTy();
    // B as an f32 array: the operand's own storage when it has one, else its rows straight
    // from memory where it is a load read where the dot is (one row of C: each element of B
    // is used once), else computed once here.
    llvm::AllocaInst *b_array = state_[size_t(op.operands[1])].array;
    const std::optional<RowsInMemory> b_rows = b_array || M != 1 ? std::nullopt : rows_in_memory(op.operands[1]);
    if (!b_array && !b_rows) {
      b_array = alloca_array(bt, "dot.b");
      materialize(op.operands[1], b_array);
    }
    // Row n-chunks of at most one register each (the last one may be narrower).
    const DotMachine machine = host_dot_machine();
    std::vector<std::pair<int64_t, int64_t>> chunks;  // (first column, width)
    for (int64_t n = 0; n < N; n += machine.lanes) chunks.push_back({n, std::min<int64_t>(machine.lanes, N - n)});
    const DotTile tile = choose_dot_tile(M, N, machine);

    llvm::FastMathFlags contract;
    contract.setAllowContract();
    auto vector_ptr = [&](llvm::AllocaInst *array, const ir::Type &t, llvm::Value *r, int64_t col) {
      return array_element_ptr(array, t, {r, b_.getInt64(col)});
    };
    auto vector_type = [&](int64_t width) { return llvm::FixedVectorType::get(f32, unsigned(width)); };

    // One tile: `mr` rows from row m0 by chunks [j0, j0 + nr).
    auto tile_loop = [&](llvm::Value *m0, int64_t mr, size_t j0, size_t nr) {
      CarriedValues init;
      for (int64_t r = 0; r < mr; ++r) {
        llvm::Value *row_index = b_.CreateAdd(m0, b_.getInt64(r));
        for (size_t j = j0; j < j0 + nr; ++j)
          init.push_back(b_.CreateAlignedLoad(vector_type(chunks[j].second), vector_ptr(c, ct, row_index, chunks[j].first), llvm::Align(4)));
      }
      auto step = [&](llvm::Value *k, const CarriedValues &acc) {
        std::vector<llvm::Value *> b_row;
        for (size_t j = j0; j < j0 + nr; ++j)
          b_row.push_back(b_rows ? row_vector(*b_rows, k, chunks[j].first, chunks[j].second)
                                 : b_.CreateAlignedLoad(vector_type(chunks[j].second), vector_ptr(b_array, bt, k, chunks[j].first), llvm::Align(4)));
        CarriedValues next(acc.size());
        for (int64_t r = 0; r < mr; ++r) {
          llvm::Value *a = element(op.operands[0], {b_.CreateAdd(m0, b_.getInt64(r)), k});
          for (size_t j = 0; j < nr; ++j) {
            llvm::Value *splat = b_.CreateVectorSplat(unsigned(chunks[j0 + j].second), a);
            auto *mul = llvm::cast<llvm::Instruction>(b_.CreateFMul(splat, b_row[j]));
            mul->setFastMathFlags(contract);
            const size_t at = size_t(r) * nr + j;
            auto *add = llvm::cast<llvm::Instruction>(b_.CreateFAdd(acc[at], mul));
            add->setFastMathFlags(contract);
            next[at] = add;
          }
        }
        return next;
      };
      const CarriedValues next = counted_loop(b_, b_.getInt64(K), init, step, "dot.k");
      for (int64_t r = 0; r < mr; ++r) {
        llvm::Value *row_index = b_.CreateAdd(m0, b_.getInt64(r));
        for (size_t j = 0; j < nr; ++j) b_.CreateAlignedStore(next[size_t(r) * nr + j], vector_ptr(c, ct, row_index, chunks[j0 + j].first), llvm::Align(4));
      }
    };
    // A strip of `mr` rows from m0, panel by panel.
    auto strip = [&](llvm::Value *m0, int64_t mr) {
      for (size_t j0 = 0; j0 < chunks.size(); j0 += size_t(tile.vectors)) tile_loop(m0, mr, j0, std::min(size_t(tile.vectors), chunks.size() - j0));
    };
    const int64_t full = M / tile.rows, rest = M % tile.rows;
    loop(full, [&](llvm::Value *s) { strip(b_.CreateMul(s, b_.getInt64(tile.rows)), tile.rows); });
    if (rest) strip(b_.getInt64(full * tile.rows), rest);
  }

  // A rank-2 f32 value read straight from memory a row at a time: an unmasked load of f32,
  // f16 or bf16 (or its widening to f32) evaluated where it is read, its addresses consecutive
  // along each row, of a type the host widens as vectors.
  struct RowsInMemory {
    const ir::Op *load = nullptr;
    DType elem = DType::F32;
  };
  std::optional<RowsInMemory> rows_in_memory(ir::ValueId v) {
    auto fused = [&](ir::ValueId x) { return !state_[size_t(x)].array && plan_.storage[size_t(x)] == Storage::Fused; };
    if (checks_ || fn_.type(v).shape.rank != 2 || fn_.type(v).elem != DType::F32 || !fused(v)) return std::nullopt;
    const ir::Op *def = plan_.def[size_t(v)];
    if (def && def->kind == OpKind::Cast && fused(def->operands[0])) def = plan_.def[size_t(def->operands[0])];
    if (!def || def->kind != OpKind::Load || def->operands.size() != 1) return std::nullopt;
    const DType elem = fn_.type(def->results[0]).elem;
    if ((elem != DType::F32 && elem != DType::F16 && elem != DType::BF16) || !el_.widens_vectors_of(elem) || last_axis_stride(def->operands[0]) != 1)
      return std::nullopt;
    return RowsInMemory{def, elem};
  }
  // Elements [first, first + width) of row `row` of such a value, as f32 (widened as the
  // element semantics widen one).
  llvm::Value *row_vector(const RowsInMemory &r, llvm::Value *row, int64_t first, int64_t width) {
    llvm::Value *at = element(r.load->operands[0], {row, b_.getInt64(first)});
    auto *stored = llvm::FixedVectorType::get(storage_type(r.elem), unsigned(width));
    return from_storage(b_.CreateAlignedLoad(stored, at, llvm::Align(dtype_bytes(r.elem))), r.elem);
  }

  // The integer dot (i8 or u8 operands, i32 accumulator), element by element with C in memory.
  void emit_dot_i8(const ir::Op &op, llvm::AllocaInst *c, int64_t M, int64_t N, int64_t K) {
    const ir::Type &ct = fn_.type(op.results[0]);
    const bool sign = !is_unsigned(fn_.type(op.operands[0]).elem);
    auto widen = [&](llvm::Value *x) { return sign ? b_.CreateSExt(x, b_.getInt32Ty()) : b_.CreateZExt(x, b_.getInt32Ty()); };
    loop(M, [&](llvm::Value *m) {
      loop(K, [&](llvm::Value *k) {
        llvm::Value *a = widen(element(op.operands[0], {m, k}));
        loop(N, [&](llvm::Value *n) {
          llvm::Value *bv = element(op.operands[1], {k, n});
          llvm::Value *slot = array_element_ptr(c, ct, {m, n});
          llvm::Value *acc = b_.CreateLoad(compute_type(ct), slot);
          b_.CreateStore(b_.CreateAdd(acc, b_.CreateMul(a, widen(bv))), slot);
        });
      });
    });
  }

  // A dot4 operand as rows of bytes in memory: the array of the value under any broadcasts
  // (a b shared by every row is read from its one row, not copied into each), materialized here
  // when it has none, and which axes the broadcasts stretched.
  struct ByteRows {
    llvm::AllocaInst *array = nullptr;
    ir::Type type;  // of the array
    ByteKind kind;
  };
  ByteRows byte_rows(ir::ValueId v) {
    const ByteKind kind = byte_kind(v);  // a broadcast keeps its operand's type and bounds
    while (!state_[size_t(v)].array && plan_.def[size_t(v)] && plan_.def[size_t(v)]->kind == OpKind::Broadcast) v = plan_.def[size_t(v)]->operands[0];
    ByteRows r;
    r.type = fn_.type(v);
    r.kind = kind;
    r.array = state_[size_t(v)].array;
    if (!r.array) {
      r.array = alloca_array(r.type, "dot4.operand");
      materialize(v, r.array);
    }
    return r;
  }
  // The address of row `outer` (an index over all axes but the last) of rows, at byte `at`.
  llvm::Value *byte_row(const ByteRows &r, const Index &outer, llvm::Value *at) {
    Index idx;
    for (size_t d = 0; d < outer.size(); ++d) idx.push_back(r.type.shape[int(d)] == 1 ? b_.getInt64(0) : outer[d]);
    idx.push_back(at);
    return array_element_ptr(r.array, r.type, idx);
  }

  // Rows narrower than the widest vector the path takes (a Q4_0 block's 16 quant bytes, a Q8_0
  // block's 32, against VNNI's 64) side by side: `pack` consecutive rows along the last axis
  // but one go into one vector, an operand broadcast along that axis repeats its one row, and
  // the pack's sums land in pack * row_bytes / 4 consecutive i32 of c. One row a vector would
  // leave most of each vpdpbusd idle and give the caller's f32 code one short vector per row to
  // put back together. False (nothing emitted) where the shapes do not allow it.
  bool emit_packed_dot4(IntDotEmitter &dot, const ByteRows &a, const ByteRows &bb, llvm::AllocaInst *c, const ir::Type &ct, int64_t row_bytes,
                        bool b_shared) {
    const int rank = ct.shape.rank;
    if (rank < 2) return false;
    const int64_t extent = ct.shape[rank - 2];
    int widest = 0;  // the widest vector the path takes that holds a whole number of rows, dividing the axis
    for (int w : dot.widths())
      if (w > row_bytes && w % row_bytes == 0 && extent % (w / row_bytes) == 0) {
        widest = w;
        break;
      }
    if (widest == 0) return false;
    const int64_t pack = widest / row_bytes;
    auto *bytes = llvm::FixedVectorType::get(b_.getInt8Ty(), unsigned(widest));
    auto *sums = llvm::FixedVectorType::get(b_.getInt32Ty(), unsigned(widest / 4));
    // A pack of rows of r: `pack` contiguous rows, or its one row repeated where r is broadcast along the axis.
    auto load_pack = [&](const ByteRows &r, const Index &o) -> llvm::Value * {
      if (r.type.shape[rank - 2] != 1) return b_.CreateAlignedLoad(bytes, byte_row(r, o, b_.getInt64(0)), llvm::Align(1));
      auto *row_type = llvm::FixedVectorType::get(b_.getInt8Ty(), unsigned(row_bytes));
      llvm::Value *one = b_.CreateAlignedLoad(row_type, byte_row(r, o, b_.getInt64(0)), llvm::Align(1));
      std::vector<int> repeat;
      for (int64_t i = 0; i < widest; ++i) repeat.push_back(int(i % row_bytes));
      return b_.CreateShuffleVector(one, repeat);
    };
    ir::Shape packs = ct.shape;
    packs.rank -= 1;
    packs.dims[size_t(rank - 2)] = extent / pack;
    // b's correction (int_dot.h), computed once where b is one row for the whole result.
    llvm::Value *correction = nullptr;
    if (b_shared) correction = dot.correction(load_pack(bb, Index(size_t(rank - 1), b_.getInt64(0))), a.kind, bb.kind);
    loop_nest(packs, [&](const Index &p) {
      Index o = p;
      o.back() = b_.CreateMul(p.back(), b_.getInt64(pack));
      llvm::Value *av = load_pack(a, o), *bv = load_pack(bb, o);
      Index cidx = o;
      cidx.push_back(b_.getInt64(0));
      llvm::Value *slot = array_element_ptr(c, ct, cidx);
      llvm::Value *acc = b_.CreateAlignedLoad(sums, slot, llvm::Align(4));
      b_.CreateAlignedStore(dot.dot4(acc, av, a.kind, bv, bb.kind, correction), slot, llvm::Align(4));
    });
    return true;
  }

  // c = acc + dot4(a, b): for each row (every axis but the last), the row's bytes in chunks of
  // the widest vectors the path takes (int_dot.h); corrections that depend on b alone are
  // computed once when b is the same row for every row of the result.
  void emit_dot4(const ir::Op &op) {
    const ir::Type &ct = fn_.type(op.results[0]);
    llvm::AllocaInst *c = target_array(op.results[0], "dot4");
    if (state_[size_t(op.operands[2])].array != c) materialize(op.operands[2], c);
    ByteRows a = byte_rows(op.operands[0]), bb = byte_rows(op.operands[1]);
    auto shared = [](const ByteRows &r) {
      for (int d = 0; d + 1 < r.type.shape.rank; ++d)
        if (r.type.shape[d] != 1) return false;
      return true;
    };
    if (shared(a) && !shared(bb)) std::swap(a, bb);  // the product is symmetric; b is the shared one
    IntDotEmitter dot(b_, m_, int_dot_);
    const int64_t row_bytes = fn_.type(op.operands[0]).shape[ct.shape.rank - 1];
    // Chunks: (first byte, width), widest first; the tail (a multiple of 4) in portable widths.
    std::vector<std::pair<int64_t, int>> chunks;
    int64_t at = 0;
    for (int w : dot.widths())
      while (row_bytes - at >= w) chunks.push_back({at, w}), at += w;
    for (int w : {8, 4})
      while (row_bytes - at >= w) chunks.push_back({at, w}), at += w;
    auto byte_vector = [&](int w) { return llvm::FixedVectorType::get(b_.getInt8Ty(), unsigned(w)); };
    auto sum_vector = [&](int w) { return llvm::FixedVectorType::get(b_.getInt32Ty(), unsigned(w / 4)); };
    ir::Shape outer = ct.shape;
    outer.rank -= 1;
    // A long row is a loop over its widest chunks; a short one is unrolled, with b's corrections hoisted.
    constexpr size_t kUnrolledChunks = 16;
    const int widest = chunks.empty() ? 4 : chunks[0].second;
    const bool as_loop = chunks.size() > kUnrolledChunks;
    std::vector<llvm::Value *> corrections(chunks.size(), nullptr);
    if (!as_loop && shared(bb)) {
      Index first(size_t(outer.rank), b_.getInt64(0));
      for (size_t i = 0; i < chunks.size(); ++i) {
        auto [col, w] = chunks[i];
        llvm::Value *bv = b_.CreateAlignedLoad(byte_vector(w), byte_row(bb, first, b_.getInt64(col)), llvm::Align(1));
        corrections[i] = dot.correction(bv, a.kind, bb.kind);
      }
    }
    auto chunk = [&](const Index &o, llvm::Value *col, int w, llvm::Value *correction) {
      llvm::Value *av = b_.CreateAlignedLoad(byte_vector(w), byte_row(a, o, col), llvm::Align(1));
      llvm::Value *bv = b_.CreateAlignedLoad(byte_vector(w), byte_row(bb, o, col), llvm::Align(1));
      Index cidx = o;
      cidx.push_back(b_.CreateUDiv(col, b_.getInt64(4)));
      llvm::Value *slot = array_element_ptr(c, ct, cidx);
      llvm::Value *acc = b_.CreateAlignedLoad(sum_vector(w), slot, llvm::Align(4));
      b_.CreateAlignedStore(dot.dot4(acc, av, a.kind, bv, bb.kind, correction), slot, llvm::Align(4));
    };
    if (emit_packed_dot4(dot, a, bb, c, ct, row_bytes, shared(bb))) {
      state_[size_t(op.results[0])].array = c;
      return;
    }
    loop_nest(outer, [&](const Index &o) {
      if (as_loop) {
        const int64_t full = row_bytes / widest;
        loop(full, [&](llvm::Value *i) { chunk(o, b_.CreateMul(i, b_.getInt64(widest)), widest, nullptr); });
        for (auto [col, w] : chunks)
          if (col >= full * widest) chunk(o, b_.getInt64(col), w, nullptr);
        return;
      }
      for (size_t i = 0; i < chunks.size(); ++i) chunk(o, b_.getInt64(chunks[i].first), chunks[i].second, corrections[i]);
    });
    state_[size_t(op.results[0])].array = c;
  }

  // Storage a loop or conditional writes its results into: arrays for blocks, slots for scalars.
  struct Slot {
    llvm::AllocaInst *memory = nullptr;
    ir::Type type;
  };
  std::vector<Slot> make_slots(const std::vector<ir::ValueId> &like) {
    std::vector<Slot> slots;
    for (ir::ValueId v : like) {
      const ir::Type &t = fn_.type(v);
      slots.push_back({t.shape.rank ? alloca_array(t, "carried") : alloca_slot(compute_type(t), "carried"), t});
    }
    return slots;
  }

  // Writes `values` into `slots` as if all at once: values that alias a slot (or need
  // computing) go through temporaries first.
  void write_slots(const std::vector<ir::ValueId> &values, const std::vector<Slot> &slots) {
    std::vector<llvm::Value *> scalars(values.size(), nullptr);
    std::vector<llvm::AllocaInst *> sources(values.size(), nullptr);
    for (size_t i = 0; i < values.size(); ++i) {
      const ir::Type &t = slots[i].type;
      if (t.shape.rank == 0) {
        scalars[i] = element(values[i], {});
        continue;
      }
      llvm::AllocaInst *a = state_[size_t(values[i])].array;
      if (a == slots[i].memory) continue;  // updated in place
      bool aliases = false;
      for (const Slot &s : slots) aliases |= s.memory == a;
      if (a && !aliases) {
        sources[i] = a;
      } else {
        sources[i] = alloca_array(t, "yield.tmp");
        materialize(values[i], sources[i]);
      }
    }
    for (size_t i = 0; i < values.size(); ++i) {
      if (scalars[i]) {
        b_.CreateStore(scalars[i], slots[i].memory);
      } else if (sources[i]) {
        uint64_t bytes = uint64_t(slots[i].type.shape.numel()) * m_.getDataLayout().getTypeAllocSize(compute_type(slots[i].type));
        b_.CreateMemCpy(slots[i].memory, llvm::MaybeAlign(64), sources[i], llvm::MaybeAlign(64), bytes);
      }
    }
  }

  void bind_slots(const std::vector<ir::ValueId> &values, const std::vector<Slot> &slots) {
    for (size_t i = 0; i < values.size(); ++i) {
      if (slots[i].type.shape.rank) state_[size_t(values[i])].array = slots[i].memory;
      else state_[size_t(values[i])].scalar = b_.CreateLoad(compute_type(slots[i].type), slots[i].memory);
    }
  }

  void emit_region(const ir::Region &r) {
    for (const ir::Op &op : r.ops) emit_op(op);
  }

  void emit_for(const ir::Op &op) {
    const ir::Region &body = op.regions[0];
    std::vector<ir::ValueId> inits(op.operands.begin() + 3, op.operands.end());
    std::vector<Slot> slots = make_slots(inits);
    write_slots(inits, slots);
    llvm::Value *lo = element(op.operands[0], {}), *hi = element(op.operands[1], {}), *step = element(op.operands[2], {});
    llvm::AllocaInst *iv_slot = alloca_slot(b_.getInt32Ty(), "iv");
    b_.CreateStore(lo, iv_slot);
    llvm::BasicBlock *head = llvm::BasicBlock::Create(ctx_, "for", current_function());
    llvm::BasicBlock *loop_body = llvm::BasicBlock::Create(ctx_, "for.body", current_function());
    llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx_, "for.end", current_function());
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::Value *iv = b_.CreateLoad(b_.getInt32Ty(), iv_slot);
    b_.CreateCondBr(b_.CreateICmpSLT(iv, hi), loop_body, exit);
    b_.SetInsertPoint(loop_body);
    state_[size_t(body.args[0])].scalar = iv;
    bind_slots({body.args.begin() + 1, body.args.end()}, slots);
    emit_region(body);
    write_slots(body.ops.back().operands, slots);
    b_.CreateStore(b_.CreateAdd(iv, step), iv_slot);
    b_.CreateBr(head);
    b_.SetInsertPoint(exit);
    bind_slots(op.results, slots);
  }

  void emit_if(const ir::Op &op) {
    std::vector<Slot> slots = make_slots(op.results);
    llvm::BasicBlock *then_block = llvm::BasicBlock::Create(ctx_, "if.then", current_function());
    llvm::BasicBlock *else_block = llvm::BasicBlock::Create(ctx_, "if.else", current_function());
    llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "if.end", current_function());
    b_.CreateCondBr(element(op.operands[0], {}), then_block, else_block);
    for (int branch = 0; branch < 2; ++branch) {
      b_.SetInsertPoint(branch ? else_block : then_block);
      emit_region(op.regions[size_t(branch)]);
      write_slots(op.regions[size_t(branch)].ops.back().operands, slots);
      b_.CreateBr(done);
    }
    b_.SetInsertPoint(done);
    bind_slots(op.results, slots);
  }

  // --- functions ------------------------------------------------------------------------

  // void body(ptr args, i32 pid0, pid1, pid2, i32 grid0, grid1, grid2)
  llvm::Function *emit_body(const std::string &name) {
    auto *i32 = b_.getInt32Ty();
    auto *fty = llvm::FunctionType::get(b_.getVoidTy(), {llvm::PointerType::get(ctx_, 0), i32, i32, i32, i32, i32, i32}, false);
    auto *f = llvm::Function::Create(fty, llvm::Function::InternalLinkage, name, m_);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    f->addFnAttr(llvm::Attribute::AlwaysInline);
    // Block loops are long and regular: use the widest vectors the CPU has (LLVM defaults
    // to 256 bits on AVX-512 parts to protect mixed scalar code's clock, not our case).
    f->addFnAttr("prefer-vector-width", "512");
    auto *entry = llvm::BasicBlock::Create(ctx_, "entry", f);
    b_.SetInsertPoint(entry);
    allocas_ = b_.CreateAlloca(b_.getInt8Ty(), nullptr, "alloca.point");  // allocas go before this
    for (int i = 0; i < 3; ++i) {
      pid_[size_t(i)] = f->getArg(unsigned(1 + i));
      grid_[size_t(i)] = f->getArg(unsigned(4 + i));
    }
    state_.assign(fn_.values.size(), {});
    launch_args_ = f->getArg(0);
    for (size_t i = 0; i < fn_.args.size(); ++i) bind_argument(fn_.args[i], f->getArg(0), i);
    if (bounds_checks_) checks_ = std::make_unique<BoundsChecks>(fn_, b_, m_, f->getArg(0), pid_);
    emit_region(fn_.body);
    b_.CreateRetVoid();
    allocas_->eraseFromParent();
    check_stack_size(*f);
    return f;
  }

  // Materialized blocks live on the stack of the thread running the program (8 MiB for the
  // pool's threads and a process's main thread, as Linux sets them by default): a kernel whose
  // blocks need more is refused here with its name, rather than crashing in the JIT code.
  void check_stack_size(llvm::Function &f) {
    constexpr uint64_t kLimit = uint64_t(6) << 20;  // leaves room for the caller's own frames
    uint64_t bytes = 0;
    for (llvm::Instruction &i : f.getEntryBlock())
      if (auto *a = llvm::dyn_cast<llvm::AllocaInst>(&i))
        if (auto size = a->getAllocationSize(m_.getDataLayout())) bytes += size->getFixedValue();
    if (bytes > kLimit)
      throw Error(fmt::format("kernel '{}': its blocks need {:.1f} MiB of stack on the host, more than the {} MiB a program may use; use smaller "
                              "blocks (a thread's stack is 8 MiB)",
                              fn_.name, double(bytes) / double(1 << 20), kLimit >> 20));
  }

  void bind_argument(const ir::Argument &a, llvm::Value *slots, size_t i) {
    const ir::Type &t = fn_.type(a.value);
    llvm::Value *raw = b_.CreateLoad(b_.getInt64Ty(), b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), slots, i), a.name);
    llvm::Value *v;
    if (t.is_ptr) {
      v = b_.CreateIntToPtr(raw, llvm::PointerType::get(ctx_, 0));
      if (a.spec == ir::ArgClass::Divisible16) b_.CreateAlignmentAssumption(m_.getDataLayout(), v, 16);
    } else if (t.elem == DType::F32) {
      v = b_.CreateBitCast(b_.CreateTrunc(raw, b_.getInt32Ty()), b_.getFloatTy());
    } else if (t.elem == DType::F16 || t.elem == DType::BF16) {
      llvm::Value *bits = b_.CreateTrunc(raw, b_.getInt16Ty());
      v = from_storage(t.elem == DType::F16 ? b_.CreateBitCast(bits, b_.getHalfTy()) : bits, t.elem);
    } else if (t.elem == DType::F8E4M3) {
      v = from_storage(b_.CreateTrunc(raw, b_.getInt8Ty()), t.elem);
    } else {
      v = b_.CreateTrunc(raw, compute_type(t.elem));
      if (a.spec == ir::ArgClass::Divisible16) {
        llvm::Value *low = b_.CreateAnd(v, llvm::ConstantInt::get(v->getType(), 15));
        b_.CreateAssumption(b_.CreateICmpEQ(low, llvm::ConstantInt::get(v->getType(), 0)));
      }
    }
    state_[size_t(a.value)].scalar = v;
  }

  // void entry(const u64 *args, i64 begin, i64 end, const i32 *grid)
  void emit_entry(const std::string &name, llvm::Function *body) {
    auto *ptr = llvm::PointerType::get(ctx_, 0);
    auto *i64 = b_.getInt64Ty();
    auto *fty = llvm::FunctionType::get(b_.getVoidTy(), {ptr, i64, i64, ptr}, false);
    auto *f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, name, m_);
    f->addFnAttr(llvm::Attribute::NoUnwind);
    f->addFnAttr("prefer-vector-width", "512");
    auto *entry = llvm::BasicBlock::Create(ctx_, "entry", f);
    auto *loop_block = llvm::BasicBlock::Create(ctx_, "programs", f);
    auto *done = llvm::BasicBlock::Create(ctx_, "done", f);
    b_.SetInsertPoint(entry);
    llvm::Value *g[3];
    for (int i = 0; i < 3; ++i) g[i] = b_.CreateLoad(b_.getInt32Ty(), b_.CreateConstInBoundsGEP1_32(b_.getInt32Ty(), f->getArg(3), unsigned(i)));
    b_.CreateCondBr(b_.CreateICmpSLT(f->getArg(1), f->getArg(2)), loop_block, done);
    b_.SetInsertPoint(loop_block);
    llvm::PHINode *id = b_.CreatePHI(i64, 2, "program");
    id->addIncoming(f->getArg(1), entry);
    llvm::Value *g0 = b_.CreateZExt(g[0], i64), *g1 = b_.CreateZExt(g[1], i64);
    llvm::Value *p0 = b_.CreateTrunc(b_.CreateURem(id, g0), b_.getInt32Ty());
    llvm::Value *rest = b_.CreateUDiv(id, g0);
    llvm::Value *p1 = b_.CreateTrunc(b_.CreateURem(rest, g1), b_.getInt32Ty());
    llvm::Value *p2 = b_.CreateTrunc(b_.CreateUDiv(rest, g1), b_.getInt32Ty());
    b_.CreateCall(body, {f->getArg(0), p0, p1, p2, g[0], g[1], g[2]});
    llvm::Value *next = b_.CreateAdd(id, b_.getInt64(1));
    id->addIncoming(next, loop_block);
    b_.CreateCondBr(b_.CreateICmpSLT(next, f->getArg(2)), loop_block, done);
    b_.SetInsertPoint(done);
    b_.CreateRetVoid();
  }

  const ir::Function &fn_;
  llvm::Module &m_;
  llvm::LLVMContext &ctx_;
  llvm::IRBuilder<> b_;
  HostElements el_;
  StoragePlan plan_;
  ir::ValueRanges ranges_;  // dot4 operands' bounds: which of them read as u8 and s8 alike
  std::vector<ValueState> state_;
  std::vector<int8_t> regroups_;  // regroups_lanes of fused values, -1 not yet known
  llvm::Instruction *allocas_ = nullptr;
  int64_t loops_emitted_ = 0;  // loop() calls so far: a loop whose body added none is innermost
  std::array<llvm::Value *, 3> pid_{}, grid_{};
  bool bounds_checks_ = false;
  IntDotPath int_dot_ = IntDotPath::Auto;
  std::unique_ptr<BoundsChecks> checks_;  // checked mode only
  llvm::Value *launch_args_ = nullptr;  // the launch's argument slots: names the launch to device_assert's record
};

}  // namespace

void lower_to_llvm(const ir::Function &fn, llvm::Module &module, const std::string &symbol, bool bounds_checks, IntDotPath int_dot) {
  HostLowering(fn, module, bounds_checks, int_dot).run(symbol);
}

}  // namespace kdsl::codegen
