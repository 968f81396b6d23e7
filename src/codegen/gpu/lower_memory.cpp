// lower_memory.cpp - global loads, stores and atomics: vector accesses guarded by masks
#include <fmt/format.h>

#include <kdsl/error.h>

#include "codegen/atomic_semantics.h"
#include "codegen/gpu/gpu_lowering.h"

namespace kdsl::codegen::gpu {

namespace {
llvm::Value *both(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y) { return !x ? y : !y ? x : b.CreateAnd(x, y); }
}  // namespace

// A thread's registers in groups of `width` consecutive elements of the last axis: one
// ld.global.v<width> per group where the mask (constant over the group) holds.
void GpuLowering::emit_load(const ir::Op &op) {
  ir::ValueId v = op.results[0];
  const ir::Type &t = fn_.type(v);
  bool masked = op.operands.size() == 3;
  llvm::Type *mem = storage_type(t.elem);
  if (t.shape.rank == 0) {
    auto plain = [&] { return from_storage(b_.CreateLoad(mem, element(op.operands[0], {})), t.elem); };
    if (!masked) return set_scalar(v, plain());
    llvm::Value *other = element(op.operands[2], {});
    llvm::BasicBlock *from = b_.GetInsertBlock();
    llvm::Value *loaded = nullptr;
    llvm::BasicBlock *loaded_in = nullptr;
    when(element(op.operands[1], {}), [&] {
      loaded = plain();
      loaded_in = b_.GetInsertBlock();
    });
    llvm::PHINode *phi = b_.CreatePHI(loaded->getType(), 2);
    phi->addIncoming(loaded, loaded_in);
    phi->addIncoming(other, from);
    return set_scalar(v, phi);
  }
  if (plan_.pipelined_load(&op)) return;  // copied by cp.async at the top of the loop body (lower_pipeline.cpp)
  for (ir::ValueId operand : op.operands) prepare(operand, &plan_.layout[size_t(v)]);
  int width = plan_.width_of(&op);
  int count = registers(v).count;
  std::vector<llvm::Value *> regs(static_cast<size_t>(count));
  for (int r = 0; r < count; r += width) {
    Index first = own_index(v, r);
    llvm::Value *ptr = element(op.operands[0], first);
    std::vector<llvm::Value *> others;
    if (masked)
      for (int i = 0; i < width; ++i) others.push_back(element(op.operands[2], own_index(v, r + i)));
    llvm::BasicBlock *from = b_.GetInsertBlock();
    std::vector<llvm::Value *> loaded(static_cast<size_t>(width));
    llvm::BasicBlock *loaded_in = nullptr;
    auto access = [&] {
      if (width == 1) {
        loaded[0] = from_storage(b_.CreateLoad(mem, ptr), t.elem);
      } else {
        auto *vec_ty = llvm::FixedVectorType::get(mem, unsigned(width));
        llvm::Value *vec = b_.CreateAlignedLoad(vec_ty, ptr, llvm::Align(uint64_t(width) * uint64_t(dtype_bytes(t.elem))));
        for (int i = 0; i < width; ++i) loaded[size_t(i)] = from_storage(b_.CreateExtractElement(vec, uint64_t(i)), t.elem);
      }
      loaded_in = b_.GetInsertBlock();
    };
    if (!masked) {
      access();
      for (int i = 0; i < width; ++i) regs[size_t(r + i)] = loaded[size_t(i)];
      continue;
    }
    when(element(op.operands[1], first), access);
    for (int i = 0; i < width; ++i) {
      llvm::PHINode *phi = b_.CreatePHI(loaded[size_t(i)]->getType(), 2);
      phi->addIncoming(loaded[size_t(i)], loaded_in);
      phi->addIncoming(others[size_t(i)], from);
      regs[size_t(r + i)] = phi;
    }
  }
  set_regs(v, std::move(regs));
}

void GpuLowering::emit_store(const ir::Op &op) {
  if (ir::is_atomic(op.kind)) return emit_atomic(op);
  ir::ValueId ptrs = op.operands[0];
  const ir::Type &pt = fn_.type(ptrs);
  bool masked = op.operands.size() == 3;
  if (pt.shape.rank == 0) {  // one thread writes a scalar
    llvm::Value *cond = b_.CreateICmpEQ(tid_, b_.getInt32(0));
    if (masked) cond = b_.CreateAnd(cond, element(op.operands[2], {}));
    llvm::Value *p = element(ptrs, {}), *value = to_storage(element(op.operands[1], {}), pt.elem);
    when(cond, [&] { b_.CreateStore(value, p); });
    return;
  }
  for (ir::ValueId operand : op.operands) prepare(operand, &plan_.layout[size_t(ptrs)]);
  int width = plan_.width_of(&op);
  llvm::Type *mem = storage_type(pt.elem);
  for (int r = 0; r < registers(ptrs).count; r += width) {
    Index first = own_index(ptrs, r);
    llvm::Value *p = element(ptrs, first);
    std::vector<llvm::Value *> values;
    for (int i = 0; i < width; ++i) values.push_back(to_storage(element(op.operands[1], i ? own_index(ptrs, r + i) : first), pt.elem));
    llvm::Value *cond = both(b_, masked ? element(op.operands[2], first) : nullptr, first.valid);
    auto access = [&] {
      if (width == 1) {
        b_.CreateStore(values[0], p);
        return;
      }
      llvm::Value *vec = llvm::PoisonValue::get(llvm::FixedVectorType::get(mem, unsigned(width)));
      for (int i = 0; i < width; ++i) vec = b_.CreateInsertElement(vec, values[size_t(i)], uint64_t(i));
      b_.CreateAlignedStore(vec, p, llvm::Align(uint64_t(width) * uint64_t(dtype_bytes(pt.elem))));
    };
    if (cond) when(cond, access);
    else access();
  }
}

// atom.global (atomicrmw / cmpxchg on global memory), one element at a time; duplicated
// elements are skipped so each element is updated once. A scalar atomic runs in thread 0 and
// its old value is broadcast through shared memory. Operands: (ptrs, values..., [mask]), one
// value (compare and value for cas); the old value is 0 where masked off.
void GpuLowering::emit_atomic(const ir::Op &op) {
  ir::ValueId ptrs = op.operands[0];
  const ir::Type &pt = fn_.type(ptrs);
  DType elem = pt.elem;
  const size_t values = op.kind == OpKind::AtomicCas ? 2 : 1;
  bool masked = op.operands.size() == values + 2;
  auto rmw = [&](llvm::Value *p, const Index &idx) -> llvm::Value * {
    llvm::Value *compare = values == 2 ? element(op.operands[1], idx) : nullptr;  // atomic types are stored as computed
    return emit_atomic_update(b_, op.kind, elem, p, element(op.operands[values], idx), compare);
  };
  auto guarded = [&](llvm::Value *cond, llvm::Value *p, const Index &idx) -> llvm::Value * {
    llvm::BasicBlock *from = b_.GetInsertBlock();
    llvm::Value *old = nullptr;
    llvm::BasicBlock *old_in = nullptr;
    when(cond, [&] {
      old = rmw(p, idx);
      old_in = b_.GetInsertBlock();
    });
    llvm::PHINode *phi = b_.CreatePHI(old->getType(), 2);
    phi->addIncoming(old, old_in);
    phi->addIncoming(llvm::Constant::getNullValue(old->getType()), from);
    return phi;
  };
  if (pt.shape.rank == 0) {
    llvm::Value *cond = b_.CreateICmpEQ(tid_, b_.getInt32(0));
    if (masked) cond = b_.CreateAnd(cond, element(op.operands[values + 1], {}));
    llvm::Value *old = guarded(cond, element(ptrs, {}), Index{});
    ir::Type slot_type = fn_.type(op.results[0]).with_shape(ir::Shape{1});
    llvm::Value *slot = allocate_shared(8);
    barrier_before_write();
    when(b_.CreateICmpEQ(tid_, b_.getInt32(0)), [&] { store_shared(slot, slot_type, {b_.getInt32(0)}, old); });
    barrier_after_write();
    return set_scalar(op.results[0], load_shared(slot, slot_type, {b_.getInt32(0)}));
  }
  for (ir::ValueId operand : op.operands) prepare(operand, &plan_.layout[size_t(ptrs)]);
  std::vector<llvm::Value *> olds;
  for (int r = 0; r < registers(ptrs).count; ++r) {
    Index idx = own_index(ptrs, r);
    llvm::Value *cond = both(b_, masked ? element(op.operands[values + 1], idx) : nullptr, idx.valid);
    llvm::Value *p = element(ptrs, idx);
    olds.push_back(cond ? guarded(cond, p, idx) : rmw(p, idx));
  }
  set_regs(op.results[0], std::move(olds));
}

}  // namespace kdsl::codegen::gpu
