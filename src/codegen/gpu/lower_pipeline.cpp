// lower_pipeline.cpp - software pipelining: tiles feeding tensor-core dots copied global -> shared with cp.async or TMA, num_stages - 1 iterations ahead
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include <kdsl/error.h>

#include "codegen/gpu/gpu_lowering.h"
#include "codegen/gpu/plan_kernel.h"
#include "codegen/gpu/staged_tile.h"

namespace kdsl::codegen::gpu {

// With S = num_stages buffers per pipelined load, A = S - 1 iterations ahead, and
// iterations i = 0, 1, ...:
//   before the loop:  copy iterations 0 .. A-1 into buffers 0 .. A-1, one commit each
//   iteration i:      wait_group A-1 (this thread's copies of iteration i have landed)
//                     bar.sync (everyone's have; everyone finished iteration i-1's reads)
//                     copy iteration i+A into buffer (i+A) % S (read in i-1), commit
//                     the dot reads buffer i % S (ldmatrix, or wgmma's descriptors)
// A wgmma dot whose operands are all copied ahead and whose accumulator the loop carries
// (overlapped_dot) leaves its group in flight (wait_group 1 after its commit, so iteration
// i-1's completes) while the next iteration's copies and loads go on. Then A = S - 2: the
// buffer a copy overwrites, (i-2) % S, was read by a group every thread has seen complete
// before the barrier, while (i-1) % S may still be read. The last iteration waits for its own
// group (wait_group 0) before it leaves the loop: ptxas serializes every wgmma of the loop
// (its C7514) when that wait is only after the loop.
// A copy is skipped for iterations past the end (its group is committed empty, so the
// counting stays uniform); every copy issued is waited for by the iteration that reads it.
// Each thread copies the 16-byte groups its registers of the load would hold, into the tile
// layout the dot's instruction reads (staged_tile.h: padded rows for ldmatrix, core matrices
// for wgmma's descriptors); masked-off groups copy
// 0 bytes and are zero-filled (the plan only takes loads whose `other` is 0).
// Tile loads through tensor descriptors on targets with TMA (PipelinedLoad::tensor_copy) are
// copied instead by thread 0 alone, one box a swizzle slab, and waited for through one
// mbarrier a stage rather than cp.async's groups:
//   before the loop:  thread 0 initializes the S barriers (count 1); a barrier makes them
//                     visible; iterations 0 .. A-1 copied as below
//   a copy:           thread 0 announces the stage's bytes (arrive.expect_tx), then issues its
//                     boxes, which complete those bytes on the stage's barrier
//   iteration i:      every thread waits for the phase of parity (i / S) & 1 of barrier i % S,
//                     then bar.sync as above, then the copy of iteration i+A
//   after the loop:   bar.sync (every thread has seen its last phase), thread 0 invalidates
//                     the barriers, whose space the allocator reuses
// TMA writes through the async proxy that wgmma reads through: no proxy fence for those tiles.

// The scalars of the loop body that the load's pointers and mask depend on (a head's base
// pointer `k + base`, say), in program order: they are computed for each iteration copied,
// before the body has computed them for its own.
std::vector<ir::ValueId> GpuLowering::body_scalars_of(const PipelinedLoad &p) {
  const std::set<ir::ValueId> inside = ir::defined_in(p.loop->regions[0]);
  std::set<ir::ValueId> seen, scalars;
  std::vector<ir::ValueId> todo(p.load->operands.begin(), p.load->operands.end());
  while (!todo.empty()) {
    ir::ValueId x = todo.back();
    todo.pop_back();
    if (!inside.count(x) || !def_[size_t(x)] || !seen.insert(x).second) continue;  // the induction variable is set by the caller
    if (fn_.type(x).shape.rank == 0) scalars.insert(x);
    todo.insert(todo.end(), def_[size_t(x)]->operands.begin(), def_[size_t(x)]->operands.end());
  }
  return {scalars.begin(), scalars.end()};  // value ids follow program order
}

// Runs `body` with the load's pointers, mask and coordinates those of iteration `iv`: the
// induction variable and the body scalars they depend on set for it, then restored.
template <class F>
void GpuLowering::at_iteration(const PipelinedLoad &p, llvm::Value *iv, F &&body) {
  ir::ValueId iv_value = p.loop->regions[0].args[0];
  std::vector<ir::ValueId> scalars = body_scalars_of(p);
  std::vector<std::pair<ir::ValueId, ValueState>> saved{{iv_value, state_[size_t(iv_value)]}};
  for (ir::ValueId s : scalars) saved.emplace_back(s, state_[size_t(s)]);
  set_scalar(iv_value, iv);
  for (ir::ValueId s : scalars) set_scalar(s, compute(*def_[size_t(s)], {}));
  body();
  for (auto &[value, state] : saved) state_[size_t(value)] = state;
}

void GpuLowering::copy_tile_async(const PipelinedLoad &p, llvm::Value *iv, llvm::Value *buffer, const StagedLayout &layout) {
  const ir::Op &load = *p.load;
  ir::ValueId v = load.results[0];
  const ir::Type &t = fn_.type(v);
  int eb = dtype_bytes(t.elem), width = 16 / eb;
  at_iteration(p, iv, [&] {  // the pointers and mask of iteration `iv` (index arithmetic only, plan_pipelining.h)
    for (size_t i = 0; i < 2 && i < load.operands.size(); ++i) prepare(load.operands[i], &plan_.layout[size_t(v)]);
    bool masked = load.operands.size() == 3;
    for (int r = 0; r < registers(v).count; r += width) {
      Index idx = own_index(v, r);
      llvm::Value *src = element(load.operands[0], idx);
      llvm::Value *dst = staged_address(buffer, layout, idx.coords[0], b_.CreateMul(idx.coords[1], b_.getInt32(uint32_t(eb))));
      llvm::Value *bytes = masked ? b_.CreateSelect(element(load.operands[1], idx), b_.getInt32(16), b_.getInt32(0)) : b_.getInt32(16);
      hooks_.async_copy_16(b_, dst, src, bytes);
    }
  });
}

// One thread's TMA copies of a TileLoad's tile for iteration `iv`: a box a swizzle slab wide
// (tensor_maps_: box_cols = swizzle_bytes of elements) per slab, each landing where the staged
// layout puts that slab, their bytes announced on `barrier` by the caller.
void GpuLowering::copy_tile_tensor(const PipelinedLoad &p, llvm::Value *iv, llvm::Value *buffer, const StagedLayout &layout, llvm::Value *barrier) {
  const ir::Op &tile = *p.load;
  const ir::Type &t = fn_.type(tile.results[0]);
  const int map = tensor_map_of_.at(p.load);
  const int64_t slabs = t.shape[1] * dtype_bytes(t.elem) / layout.swizzle_bytes, box_cols = tensor_maps_[size_t(map)].box_cols;
  const int plane_operand = ir::tile_plane_operand(tile);
  at_iteration(p, iv, [&] {
    llvm::Value *row = element(tile.operands[4], {}), *col = element(tile.operands[5], {});
    llvm::Value *plane = plane_operand >= 0 ? element(tile.operands[size_t(plane_operand) + 2], {}) : nullptr;
    for (int64_t slab = 0; slab < slabs; ++slab) {
      llvm::Value *dst = b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), buffer, uint64_t(slab * layout.slab_bytes));
      llvm::Value *slab_col = b_.CreateAdd(col, b_.getInt32(uint32_t(slab * box_cols)));
      if (plane) hooks_.tensor_copy_3d(b_, dst, tensor_map_params_[size_t(map)], slab_col, row, plane, barrier);
      else hooks_.tensor_copy_2d(b_, dst, tensor_map_params_[size_t(map)], slab_col, row, barrier);
    }
  });
}

llvm::Value *GpuLowering::stage_tile(const LoopPipeline &pl, size_t load, llvm::Value *stage) {
  return b_.CreateInBoundsGEP(b_.getInt8Ty(), pl.buffers[load], b_.CreateMul(stage, b_.getInt32(uint32_t(pl.stage_bytes[load]))));
}

llvm::Value *GpuLowering::stage_barrier(const LoopPipeline &pl, llvm::Value *stage) {
  return b_.CreateInBoundsGEP(b_.getInt8Ty(), pl.barriers, b_.CreateMul(stage, b_.getInt32(8)));
}

// Issues the copies of iteration `iv` (if it is < hi) into buffer `stage`: each thread's
// cp.async groups, committed (an empty group past the end, so that the counting stays
// uniform); thread 0's TMA boxes, announced on the stage's barrier.
void GpuLowering::copy_stage(const LoopPipeline &pl, llvm::Value *iv, llvm::Value *hi, llvm::Value *stage) {
  llvm::Value *inside = b_.CreateICmpSLT(iv, hi);
  if (pl.has_async_copies) {
    when(inside, [&] {
      for (size_t i = 0; i < pl.loads.size(); ++i)
        if (!pl.loads[i]->tensor_copy) copy_tile_async(*pl.loads[i], iv, stage_tile(pl, i, stage), pl.layouts[i]);
    });
    hooks_.async_commit(b_);
  }
  if (pl.has_tensor_copies)
    when(b_.CreateAnd(inside, b_.CreateICmpEQ(tid_, b_.getInt32(0))), [&] {
      llvm::Value *barrier = stage_barrier(pl, stage);
      hooks_.barrier_expect(b_, barrier, b_.getInt32(uint32_t(pl.tensor_bytes)));
      for (size_t i = 0; i < pl.loads.size(); ++i)
        if (pl.loads[i]->tensor_copy) copy_tile_tensor(*pl.loads[i], iv, stage_tile(pl, i, stage), pl.layouts[i], barrier);
    });
}

// Spins until the phase of `parity` of the transaction barrier has completed.
void GpuLowering::wait_for_phase(llvm::Value *barrier, llvm::Value *parity) {
  llvm::Function *f = b_.GetInsertBlock()->getParent();
  llvm::BasicBlock *wait = llvm::BasicBlock::Create(ctx_, "tma.wait", f), *done = llvm::BasicBlock::Create(ctx_, "tma.landed", f);
  b_.CreateBr(wait);
  b_.SetInsertPoint(wait);
  b_.CreateCondBr(hooks_.barrier_phase_done(b_, barrier, parity), done, wait);
  b_.SetInsertPoint(done);
}

bool GpuLowering::pipeline_prologue(const ir::Op &loop, llvm::Value *lo, llvm::Value *hi, llvm::Value *step) {
  LoopPipeline pl;
  for (const PipelinedLoad &p : plan_.pipelined)
    if (p.loop == &loop) pl.loads.push_back(&p);
  if (pl.loads.empty()) return false;
  int stages = plan_.num_stages;
  pl.overlapped = overlapped_dot(loop, pl.loads, pl.overlapped_carry);
  pl.ahead = pl.overlapped ? stages - 2 : stages - 1;
  for (const PipelinedLoad *p : pl.loads) {
    const ir::Type &t = fn_.type(p->load->results[0]);
    const MatrixInstruction &mi = target_.matrix_instructions[size_t(plan_.instruction_of(p->dot))];
    StagedLayout layout = staged_layout(mi, t.shape[0], t.shape[1] * dtype_bytes(t.elem));
    pl.layouts.push_back(layout);
    pl.stage_bytes.push_back(layout.bytes());
    pl.buffers.push_back(allocate_shared(stages * layout.bytes(), layout.swizzled() ? StagedLayout::kSwizzleAlign : 16));
    (p->tensor_copy ? pl.has_tensor_copies : pl.has_async_copies) = true;
    if (p->tensor_copy) pl.tensor_bytes += t.shape[0] * t.shape[1] * dtype_bytes(t.elem);  // a box's bytes count in full, zero-filled or not
  }
  if (pl.has_tensor_copies) pl.barriers = allocate_shared(8 * stages, 8);
  barrier_before_write();  // inside an outer loop, its previous iteration read these buffers
  if (pl.has_tensor_copies) {
    // One thread makes the barriers; every thread orders its earlier ordinary writes to this
    // space before the copy engine's (the async proxy's), and the barrier after makes the
    // barriers' initialization visible before anyone waits on them.
    when(b_.CreateICmpEQ(tid_, b_.getInt32(0)), [&] {
      for (int s = 0; s < stages; ++s) hooks_.barrier_init(b_, stage_barrier(pl, b_.getInt32(uint32_t(s))), 1);
      hooks_.barrier_init_fence(b_);
    });
    hooks_.async_proxy_fence(b_);
    hooks_.barrier(b_);
  }
  for (int s = 0; s < pl.ahead; ++s) copy_stage(pl, b_.CreateAdd(lo, b_.CreateMul(step, b_.getInt32(uint32_t(s)))), hi, b_.getInt32(uint32_t(s)));
  pipelines_[&loop] = std::move(pl);
  return true;
}

// After the loop: once every thread has seen its last phase, the barriers become ordinary
// shared memory again (the space is reused after the loop).
void GpuLowering::pipeline_exit(const ir::Op &loop) {
  auto it = pipelines_.find(&loop);
  if (it == pipelines_.end() || !it->second.has_tensor_copies) return;
  hooks_.barrier(b_);
  when(b_.CreateICmpEQ(tid_, b_.getInt32(0)), [&] {
    for (int s = 0; s < plan_.num_stages; ++s) hooks_.barrier_invalidate(b_, stage_barrier(it->second, b_.getInt32(uint32_t(s))));
  });
}

// A dot's A operand computed before the loop (attention's Q) is written into its staged tile
// once, before the loop, instead of on every iteration from registers held across the loop:
// its registers die here, and the body's dots read the tile as they read a pipelined
// operand's (state.staged). Dots at the top level of the body whose instruction reads staged
// tiles (MatrixInstruction::staged_tiles); wgmma's register-A form is left as it is. The
// caller clears `staged` of what this returns once the loop is done.
std::vector<ir::ValueId> GpuLowering::stage_invariant_operands(const ir::Op &loop) {
  const ir::Region &body = loop.regions[0];
  const std::set<ir::ValueId> inside = ir::defined_in(body);
  std::vector<ir::ValueId> staged;
  bool by_descriptor = false;
  for (const ir::Op &dot : body.ops) {
    if (dot.kind != OpKind::Dot || plan_.instruction_of(&dot) < 0) continue;
    const MatrixInstruction &mi = target_.matrix_instructions[size_t(plan_.instruction_of(&dot))];
    ir::ValueId a = dot.operands[0];
    const ir::Type &t = fn_.type(a);
    if (!mi.staged_tiles || inside.count(a) || state_[size_t(a)].staged) continue;
    if (mi.descriptor_operands && plan_.layout[size_t(a)] == plan_.layout[size_t(dot.results[0])] && dtype_bytes(t.elem) == 2) continue;
    StagedLayout layout = staged_layout(mi, t.shape[0], t.shape[1] * dtype_bytes(t.elem));
    std::vector<llvm::Value *> regs = to_regs(a);
    llvm::Value *tile = allocate_shared(layout.bytes(), layout.swizzled() ? StagedLayout::kSwizzleAlign : 16);
    barrier_before_write();
    stage_operand(a, regs, tile, layout, false);
    state_[size_t(a)].staged = tile;
    staged.push_back(a);
    by_descriptor |= mi.descriptor_operands;
  }
  if (by_descriptor) hooks_.async_proxy_fence(b_);
  if (!staged.empty()) barrier_after_write();
  return staged;
}

// The dot of `loop` that may keep its wgmma group in flight into the next iteration: at
// least 3 stages (so copies still run one iteration ahead), every pipelined load of the loop
// feeding it, both its operands copied ahead (nothing it stages itself could be overwritten
// while read), on an instruction that reads by descriptor, at the top level of the body, and
// its accumulator a carried value that only it reads and that only the yield takes from it.
// `carry` is set to that value's index among the loop's carried values.
const ir::Op *GpuLowering::overlapped_dot(const ir::Op &loop, const std::vector<const PipelinedLoad *> &loads, int &carry) {
  if (plan_.num_stages < 3 || loads.empty()) return nullptr;
  const ir::Op *dot = loads[0]->dot;
  bool a = false, b = false;
  for (const PipelinedLoad *p : loads) {
    if (p->dot != dot) return nullptr;
    (p->operand == 0 ? a : b) = true;
  }
  if (!a || !b || !target_.matrix_instructions[size_t(plan_.instruction_of(dot))].descriptor_operands) return nullptr;
  const ir::Region &body = loop.regions[0];
  const ir::Op &yield = body.ops.back();
  auto arg = std::find(body.args.begin() + 1, body.args.end(), dot->operands[2]);
  if (arg == body.args.end()) return nullptr;
  const size_t index = size_t(arg - body.args.begin() - 1);
  int acc_uses = 0, result_uses = 0;
  ir::walk(body, [&](const ir::Op &op) {
    for (ir::ValueId x : op.operands) {
      acc_uses += x == dot->operands[2];
      result_uses += x == dot->results[0];
    }
  });
  if (acc_uses != 1 || result_uses != 1 || yield.operands[index] != dot->results[0]) return nullptr;
  if (std::none_of(body.ops.begin(), body.ops.end(), [&](const ir::Op &o) { return &o == dot; })) return nullptr;
  carry = int(index);
  return dot;
}

bool GpuLowering::dot_overlaps(const ir::Op &dot) const {
  return std::any_of(pipelines_.begin(), pipelines_.end(), [&](const auto &entry) { return entry.second.overlapped == &dot; });
}

// Ends the body of `loop` when its dot overlaps iterations: the next iteration runs while
// iv_next < hi (back to `head`); otherwise a block of its own waits for the dot's last group
// and leaves the loop. Returns that block, `next` (the carried values after the last
// iteration) holding the waited accumulator; null, emitting nothing, for other loops.
llvm::BasicBlock *GpuLowering::drain_overlapped_dot(const ir::Op &loop, llvm::Value *iv_next, llvm::Value *hi, llvm::BasicBlock *head,
                                                    std::vector<std::vector<llvm::Value *>> &next) {
  const LoopPipeline &pl = pipelines_.at(&loop);
  if (!pl.overlapped) return nullptr;
  llvm::BasicBlock *drain = llvm::BasicBlock::Create(ctx_, "for.drain", b_.GetInsertBlock()->getParent());
  b_.CreateCondBr(b_.CreateICmpSLT(iv_next, hi), head, drain);
  b_.SetInsertPoint(drain);
  std::vector<llvm::Value *> &acc = next[size_t(pl.overlapped_carry)];
  acc = hooks_.wait_matrix_dots(b_, acc);
  return drain;
}

// Whether a dot reading any of `loads` copied by cp.async reads shared memory by descriptor
// (wgmma, through the async proxy: those ordinary writes need a proxy fence; TMA's do not).
bool GpuLowering::reads_by_descriptor(const std::vector<const PipelinedLoad *> &loads) {
  return std::any_of(loads.begin(), loads.end(), [&](const PipelinedLoad *p) {
    return !p->tensor_copy && target_.matrix_instructions[size_t(plan_.instruction_of(p->dot))].descriptor_operands;
  });
}

void GpuLowering::pipeline_header(const ir::Op &loop, llvm::BasicBlock *pre) {
  LoopPipeline &pl = pipelines_.at(&loop);
  pl.stage = b_.CreatePHI(b_.getInt32Ty(), 2, "stage");
  pl.stage->addIncoming(b_.getInt32(0), pre);
  if (pl.has_tensor_copies) {
    pl.phase = b_.CreatePHI(b_.getInt32Ty(), 2, "phase");
    pl.phase->addIncoming(b_.getInt32(0), pre);
  }
}

void GpuLowering::pipeline_body(const ir::Op &loop, llvm::Value *iv, llvm::Value *hi, llvm::Value *step) {
  LoopPipeline &pl = pipelines_.at(&loop);
  int stages = plan_.num_stages;
  if (pl.has_async_copies) hooks_.async_wait(b_, pl.ahead - 1);
  if (pl.has_tensor_copies) wait_for_phase(stage_barrier(pl, pl.stage), pl.phase);
  if (reads_by_descriptor(pl.loads)) hooks_.async_proxy_fence(b_);  // before the barrier: the dot needs no barrier of its own
  hooks_.barrier(b_);
  shared_dirty_ = false;
  llvm::Value *ahead = b_.CreateAdd(pl.stage, b_.getInt32(uint32_t(pl.ahead)));
  ahead = b_.CreateSelect(b_.CreateICmpUGE(ahead, b_.getInt32(uint32_t(stages))), b_.CreateSub(ahead, b_.getInt32(uint32_t(stages))), ahead);
  copy_stage(pl, b_.CreateAdd(iv, b_.CreateMul(step, b_.getInt32(uint32_t(pl.ahead)))), hi, ahead);
  for (size_t i = 0; i < pl.loads.size(); ++i) {
    ir::ValueId v = pl.loads[i]->load->results[0];
    state_[size_t(v)] = {};
    state_[size_t(v)].staged = stage_tile(pl, i, pl.stage);
    state_[size_t(v)].depth = depth_;
  }
}

void GpuLowering::pipeline_latch(const ir::Op &loop, llvm::BasicBlock *latch) {
  LoopPipeline &pl = pipelines_.at(&loop);
  llvm::IRBuilder<> lb(latch->getTerminator());
  llvm::Value *next = lb.CreateAdd(pl.stage, lb.getInt32(1));
  llvm::Value *wraps = lb.CreateICmpEQ(next, lb.getInt32(uint32_t(plan_.num_stages)));
  pl.stage->addIncoming(lb.CreateSelect(wraps, lb.getInt32(0), next), latch);
  if (pl.phase) pl.phase->addIncoming(lb.CreateSelect(wraps, lb.CreateXor(pl.phase, lb.getInt32(1)), pl.phase), latch);
}

// The tensor maps of the tile loads TMA copies, then of the tile stores it writes, one per
// distinct map (two tiles of one tensor read in one box share it), in the order the kernel
// takes them after its arguments. A store's box is its tile's rows, one swizzle slab wide
// (store_box_layout), or the whole tile unswizzled.
void GpuLowering::plan_tensor_maps() {
  auto add = [&](const ir::Op &tile, TensorMapSpec spec) {
    if (!tensor_map_fields(fn_, tile, spec))
      internal_error(fmt::format("GPU lowering of '{}': a tile {} planned for TMA has no tensor map", fn_.name, ir::op_name(tile.kind)));
    auto found = std::find(tensor_maps_.begin(), tensor_maps_.end(), spec);
    tensor_map_of_[&tile] = int(found - tensor_maps_.begin());
    if (found == tensor_maps_.end()) tensor_maps_.push_back(spec);
  };
  for (const PipelinedLoad &p : plan_.pipelined) {
    if (!p.tensor_copy) continue;
    const ir::Type &t = fn_.type(p.load->results[0]);
    const MatrixInstruction &mi = target_.matrix_instructions[size_t(plan_.instruction_of(p.dot))];
    TensorMapSpec spec;
    spec.elem = t.elem;
    spec.swizzle_bytes = staged_layout(mi, t.shape[0], t.shape[1] * dtype_bytes(t.elem)).swizzle_bytes;
    spec.box_rows = int(t.shape[0]);
    spec.box_cols = spec.swizzle_bytes / dtype_bytes(t.elem);
    add(*p.load, spec);
  }
  for (const ir::Op *store : plan_.tensor_stores) {
    const ir::Type &t = fn_.type(store->operands[6]);
    const StagedLayout layout = store_box_layout(t.shape[0], t.shape[1] * dtype_bytes(t.elem));
    TensorMapSpec spec;
    spec.elem = t.elem;
    spec.swizzle_bytes = layout.swizzle_bytes;
    spec.box_rows = int(t.shape[0]);
    spec.box_cols = layout.swizzled() ? layout.swizzle_bytes / dtype_bytes(t.elem) : int(t.shape[1]);
    spec.written = true;
    add(*store, spec);
  }
}

}  // namespace kdsl::codegen::gpu
