// lower_control.cpp - the kernel function, ops in program order, uniform for and if
#include <llvm/IR/Intrinsics.h>

#include <fmt/format.h>

#include <kdsl/error.h>

#include "codegen/gpu/gpu_lowering.h"

namespace kdsl::codegen::gpu {

void GpuLowering::set_regs(ir::ValueId v, std::vector<llvm::Value *> regs) {
  ValueState &st = state_[size_t(v)];
  st = {};
  st.regs = std::move(regs);
  st.has_regs = true;
  st.depth = depth_;
}

void GpuLowering::set_scalar(ir::ValueId v, llvm::Value *s) {
  ValueState &st = state_[size_t(v)];
  st = {};
  st.scalar = s;
  st.depth = depth_;
}

void GpuLowering::emit_op(const ir::Op &op) {
  switch (op.kind) {
    case OpKind::Load: return emit_load(op);
    case OpKind::TileLoad:  // plan_gpu_kernel expanded every one TMA does not copy at the top of the loop body
      if (!plan_.pipelined_load(&op)) internal_error(fmt::format("GPU lowering of '{}': a tile load was neither expanded nor copied by TMA", fn_.name));
      return;
    case OpKind::TileStore: return emit_tile_store(op);  // plan_gpu_kernel expanded every one TMA does not write
    case OpKind::Store: case OpKind::AtomicAdd: case OpKind::AtomicMax: case OpKind::AtomicMin: case OpKind::AtomicXchg: case OpKind::AtomicCas:
      return emit_store(op);
    case OpKind::ScanSum: case OpKind::ScanMax: case OpKind::ScanMin: return emit_scan(op);
    case OpKind::Gather: return emit_gather(op);
    case OpKind::DevicePrint: return emit_print(op);
    case OpKind::DeviceAssert: return emit_assert(op);
    case OpKind::Prefetch: return;  // a hint; other warps hide the latency it would (memory.h)
    case OpKind::Dot: return emit_dot(op);
    case OpKind::Dot4: return emit_dot4(op);
    case OpKind::For: return emit_for(op);
    case OpKind::If: return emit_if(op);
    case OpKind::Yield: return;  // handled by the parent op
    case OpKind::ReduceSum: case OpKind::ReduceMax: case OpKind::ReduceMin: case OpKind::ArgMax: case OpKind::ArgMin:
      return emit_reduce(op);
    default:
      break;
  }
  ir::ValueId v = op.results.at(0);
  const ir::Type &t = fn_.type(v);
  if (t.shape.rank == 0) return set_scalar(v, compute(op, {}));
  if (is_index_math(op, t)) {  // recomputed where read (see element())
    state_[size_t(v)] = {};
    state_[size_t(v)].depth = depth_;
    return;
  }
  for (ir::ValueId operand : op.operands) prepare(operand, &plan_.layout[size_t(v)]);
  std::vector<llvm::Value *> regs;
  for (int r = 0; r < registers(v).count; ++r) regs.push_back(compute(op, own_index(v, r)));
  set_regs(v, std::move(regs));
}

void GpuLowering::emit_region(const ir::Region &r) {
  for (const ir::Op &op : r.ops) emit_op(op);
}

namespace {
struct Carried {
  std::vector<llvm::PHINode *> phis;  // one per register (one for a scalar)
};
}  // namespace

// for (iv = lo; iv < hi; iv += step): every thread runs every iteration (lo, hi, step are
// uniform scalars), so barriers inside the body are reached by all.
void GpuLowering::emit_for(const ir::Op &op) {
  const ir::Region &body = op.regions[0];
  llvm::Value *lo = element(op.operands[0], {}), *hi = element(op.operands[1], {}), *step = element(op.operands[2], {});
  std::vector<std::vector<llvm::Value *>> inits;
  for (size_t i = 3; i < op.operands.size(); ++i) inits.push_back(regs_as(op.operands[i], body.args[i - 2]));
  const int64_t shared_mark = shared_top_;  // the loop's buffers are released after it
  bool pipelined = pipeline_prologue(op, lo, hi, step);
  std::vector<ir::ValueId> staged_once = stage_invariant_operands(op);
  llvm::Function *f = b_.GetInsertBlock()->getParent();
  llvm::BasicBlock *pre = b_.GetInsertBlock();
  llvm::BasicBlock *head = llvm::BasicBlock::Create(ctx_, "for", f);
  llvm::BasicBlock *loop = llvm::BasicBlock::Create(ctx_, "for.body", f);
  llvm::BasicBlock *exit = llvm::BasicBlock::Create(ctx_, "for.end", f);
  // A loop whose wgmma group stays in flight across iterations (lower_pipeline.cpp) is guarded
  // once and tests its bound at the end of each iteration, so that it leaves only through the
  // block that waits for that group: ptxas must see no way out of the loop around it.
  const bool overlapped = pipelined && overlaps_iterations(op);
  if (overlapped) b_.CreateCondBr(b_.CreateICmpSLT(lo, hi), head, exit);
  else b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode *iv = b_.CreatePHI(b_.getInt32Ty(), 2, "iv");
  iv->addIncoming(lo, pre);
  if (pipelined) pipeline_header(op, pre);
  std::vector<std::vector<llvm::PHINode *>> phis(inits.size());
  for (size_t i = 0; i < inits.size(); ++i)
    for (llvm::Value *init : inits[i]) {
      llvm::PHINode *phi = b_.CreatePHI(init->getType(), 2);
      phi->addIncoming(init, pre);
      phis[i].push_back(phi);
    }
  if (overlapped) b_.CreateBr(loop);
  else b_.CreateCondBr(b_.CreateICmpSLT(iv, hi), loop, exit);

  b_.SetInsertPoint(loop);
  ++depth_;
  shared_dirty_ = true;  // the previous iteration may still be reading
  set_scalar(body.args[0], iv);
  if (pipelined) pipeline_body(op, iv, hi, step);
  auto bind = [&](ir::ValueId v, const std::vector<llvm::PHINode *> &p) {
    std::vector<llvm::Value *> values(p.begin(), p.end());
    if (fn_.type(v).shape.rank == 0) set_scalar(v, values[0]);
    else set_regs(v, values);
  };
  for (size_t i = 0; i < phis.size(); ++i) bind(body.args[i + 1], phis[i]);
  emit_region(body);
  const ir::Op &yield = body.ops.back();
  std::vector<std::vector<llvm::Value *>> next;
  for (size_t i = 0; i < yield.operands.size(); ++i) next.push_back(regs_as(yield.operands[i], body.args[i + 1]));
  llvm::Value *iv_next = b_.CreateAdd(iv, step);
  llvm::BasicBlock *latch = b_.GetInsertBlock();
  iv->addIncoming(iv_next, latch);
  for (size_t i = 0; i < phis.size(); ++i)
    for (size_t r = 0; r < phis[i].size(); ++r) phis[i][r]->addIncoming(next[i][r], latch);
  llvm::BasicBlock *drained = overlapped ? drain_overlapped_dot(op, iv_next, hi, head, next) : nullptr;
  b_.CreateBr(drained ? exit : head);
  if (pipelined) pipeline_latch(op, latch);
  for (auto it = shared_made_.begin(); it != shared_made_.end();) {
    if (it->second == depth_) {
      state_[size_t(it->first)].shared = nullptr;
      it = shared_made_.erase(it);
    } else {
      ++it;
    }
  }
  --depth_;
  // Every copy the pipeline issued was waited for inside the loop (lower_pipeline.cpp), and
  // whatever the body put in shared memory is dead: the results are in registers.
  shared_top_ = shared_mark;
  for (ir::ValueId x : staged_once) state_[size_t(x)].staged = nullptr;

  b_.SetInsertPoint(exit);
  shared_dirty_ = true;
  if (drained) {  // the results: the initial values (no iteration ran) or the drained ones
    for (size_t i = 0; i < phis.size(); ++i) {
      std::vector<llvm::PHINode *> merged;
      for (size_t r = 0; r < phis[i].size(); ++r) {
        llvm::PHINode *phi = b_.CreatePHI(phis[i][r]->getType(), 2);
        phi->addIncoming(inits[i][r], pre);
        phi->addIncoming(next[i][r], drained);
        merged.push_back(phi);
      }
      phis[i] = merged;
    }
  }
  for (size_t i = 0; i < phis.size(); ++i) bind(op.results[i], phis[i]);
  if (pipelined) pipeline_exit(op);  // after the phis, which open the block
}

void GpuLowering::emit_if(const ir::Op &op) {
  llvm::Function *f = b_.GetInsertBlock()->getParent();
  llvm::BasicBlock *blocks[2] = {llvm::BasicBlock::Create(ctx_, "if.then", f), llvm::BasicBlock::Create(ctx_, "if.else", f)};
  llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "if.end", f);
  b_.CreateCondBr(element(op.operands[0], {}), blocks[0], blocks[1]);
  std::vector<std::vector<llvm::Value *>> yielded[2];
  llvm::BasicBlock *ends[2] = {};
  bool dirty = shared_dirty_, dirty_after = false;
  const int64_t shared_mark = shared_top_;  // each branch's shared memory is released after it
  for (int branch = 0; branch < 2; ++branch) {
    b_.SetInsertPoint(blocks[branch]);
    shared_dirty_ = dirty;
    ++depth_;
    const ir::Region &region = op.regions[size_t(branch)];
    emit_region(region);
    const ir::Op &yield = region.ops.back();
    for (size_t i = 0; i < yield.operands.size(); ++i) yielded[branch].push_back(regs_as(yield.operands[i], op.results[i]));
    for (auto it = shared_made_.begin(); it != shared_made_.end();) {
      if (it->second == depth_) {
        state_[size_t(it->first)].shared = nullptr;
        it = shared_made_.erase(it);
      } else {
        ++it;
      }
    }
    --depth_;
    shared_top_ = shared_mark;
    dirty_after |= shared_dirty_;
    ends[branch] = b_.GetInsertBlock();
    b_.CreateBr(done);
  }
  b_.SetInsertPoint(done);
  shared_dirty_ = dirty_after;
  for (size_t i = 0; i < op.results.size(); ++i) {
    std::vector<llvm::Value *> merged;
    for (size_t r = 0; r < yielded[0][i].size(); ++r) {
      llvm::PHINode *phi = b_.CreatePHI(yielded[0][i][r]->getType(), 2);
      phi->addIncoming(yielded[0][i][r], ends[0]);
      phi->addIncoming(yielded[1][i][r], ends[1]);
      merged.push_back(phi);
    }
    if (fn_.type(op.results[i]).shape.rank == 0) set_scalar(op.results[i], merged[0]);
    else set_regs(op.results[i], merged);
  }
}

void GpuLowering::bind_argument(const ir::Argument &a, llvm::Value *param) {
  const ir::Type &t = fn_.type(a.value);
  llvm::Value *v = param;
  if (t.is_ptr) {
    if (a.spec == ir::ArgClass::Divisible16) b_.CreateAlignmentAssumption(m_.getDataLayout(), v, 16);
  } else {
    v = from_storage(param, t.elem);
    if (!is_float(t.elem) && t.elem != DType::Bool && a.spec == ir::ArgClass::Divisible16) {
      llvm::Value *low = b_.CreateAnd(v, llvm::ConstantInt::get(v->getType(), 15));
      b_.CreateAssumption(b_.CreateICmpEQ(low, llvm::ConstantInt::get(v->getType(), 0)));
    }
  }
  set_scalar(a.value, v);
}

bool GpuLowering::plan_uses_descriptor_operands() const {
  for (auto &[op, i] : plan_.dot_instruction)
    if (target_.matrix_instructions[size_t(i)].descriptor_operands) return true;
  return false;
}

LoweringResult GpuLowering::run(const std::string &symbol) {
  std::vector<llvm::Type *> params;
  for (const ir::Argument &a : fn_.args) {
    const ir::Type &t = fn_.type(a.value);
    params.push_back(t.is_ptr ? llvm::PointerType::get(ctx_, hooks_.global_address_space()) : storage_type(t.elem));
  }
  plan_tensor_maps();  // each a 128-byte parameter passed by value after the arguments (tensor_map.h)
  params.insert(params.end(), tensor_maps_.size(), b_.getPtrTy());
  auto *f = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), params, false), llvm::Function::ExternalLinkage, symbol, m_);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  for (size_t i = 0; i < tensor_maps_.size(); ++i) {
    llvm::Argument *map = f->getArg(unsigned(fn_.args.size() + i));
    map->addAttr(llvm::Attribute::getWithByValType(ctx_, llvm::ArrayType::get(b_.getInt8Ty(), 128)));
    map->addAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(64)));
    map->setName(fmt::format("tensor_map{}", i));
    tensor_map_params_.push_back(map);
  }
  hooks_.mark_kernel(f, threads_);
  for (size_t i = 0; i < fn_.args.size(); ++i) f->getArg(unsigned(i))->setName(fn_.args[i].name);
  shared_base_ = new llvm::GlobalVariable(m_, llvm::ArrayType::get(b_.getInt8Ty(), 0), false, llvm::GlobalValue::ExternalLinkage, nullptr,
                                          symbol + "_shared", nullptr, llvm::GlobalValue::NotThreadLocal, hooks_.shared_address_space());
  shared_base_->setAlignment(llvm::Align(16));

  auto *entry = llvm::BasicBlock::Create(ctx_, "prologue", f);
  auto *body = llvm::BasicBlock::Create(ctx_, "body", f);
  b_.SetInsertPoint(entry);
  tid_ = hooks_.thread_id(b_);
  b_.CreateAssumption(b_.CreateICmpULT(tid_, b_.getInt32(uint32_t(threads_))));
  lane_ = b_.CreateAnd(tid_, uint64_t(target_.warp_size - 1), "lane");
  warp_ = b_.CreateLShr(tid_, uint64_t(__builtin_ctz(unsigned(target_.warp_size))), "warp");
  for (int i = 0; i < 3; ++i) {
    pid_[size_t(i)] = hooks_.block_id(b_, i);
    grid_[size_t(i)] = hooks_.grid_size(b_, i);
  }
  // Swizzled operand tiles (wgmma) are permuted by address bits up to 1024 bytes, so their
  // offsets count from the first 1024-byte boundary of the dynamic shared memory, whatever
  // alignment the driver gives it, and the kernel asks for the bytes that may cost.
  shared_origin_ = shared_base_;
  int64_t origin_slack = 0;
  if (plan_uses_descriptor_operands() || !plan_.tensor_stores.empty()) {
    llvm::Value *address = b_.CreatePtrToInt(shared_base_, b_.getInt64Ty());
    llvm::Value *skip = b_.CreateAnd(b_.CreateSub(b_.getInt64(0), address), b_.getInt64(StagedLayout::kSwizzleAlign - 1));
    shared_origin_ = b_.CreateInBoundsGEP(b_.getInt8Ty(), shared_base_, skip, "shared.origin");
    origin_slack = StagedLayout::kSwizzleAlign - 16;
  }
  prologue_end_ = b_.CreateBr(body);
  b_.SetInsertPoint(body);
  for (size_t i = 0; i < fn_.args.size(); ++i) bind_argument(fn_.args[i], f->getArg(unsigned(i)));
  emit_region(fn_.body);
  b_.CreateRetVoid();
  return {int((shared_peak_ + origin_slack + 15) / 16 * 16), threads_, tensor_maps_};
}

LoweringResult lower_to_gpu(const ir::Function &fn, const LayoutPlan &plan, GpuTarget &target, llvm::Module &module,
                              const std::string &symbol) {
  return GpuLowering(fn, plan, target, module).run(symbol);
}

}  // namespace kdsl::codegen::gpu
