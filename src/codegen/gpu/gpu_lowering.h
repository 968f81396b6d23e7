// gpu_lowering.h - the state of the GPU lowering, shared by its files (core, math, reductions, dot)
#pragma once
#include <llvm/IR/IRBuilder.h>

#include <map>
#include <string>
#include <vector>

#include "codegen/gpu/gpu_elements.h"
#include "codegen/gpu/gpu_target.h"
#include "codegen/gpu/layout.h"
#include "codegen/gpu/lower_gpu.h"
#include "codegen/gpu/staged_tile.h"

namespace kdsl::codegen::gpu {

// An element position of a block: one i32 per axis. When it is a thread's own register r of
// the layout (and shape) the value is held in, `layout` says so and registers are read
// directly; otherwise the value must be readable at any index (recomputed or in shared memory).
struct Index {
  std::vector<llvm::Value *> coords;
  const Layout *layout = nullptr;
  const ir::Shape *shape = nullptr;
  int reg = -1;
  llvm::Value *valid = nullptr;  // false on duplicated elements (layout wraps); null: always valid
  std::vector<llvm::Value *> axis_valid;  // the same, per axis
  // Where coords[0] is known to be this thread's first row of `row_layout` plus `row_offset`
  // (a thread's own register, through views that keep axis 0): a row vector held in a Slice
  // of that layout (layout.h) reads its register for that row.
  const Layout *row_layout = nullptr;
  int row_offset = 0;
};

// Integer, boolean and pointer elementwise ops, views, ranges, constants: recomputed where read.
bool is_index_math(const ir::Op &op, const ir::Type &t);

// An i32 LLVM value with integer operators, so index formulas written once as templates over
// their integer type (layout.h, mma_fragments.h) emit IR here and run on ints in the tests.
struct IrInt {
  llvm::IRBuilder<> *b;
  llvm::Value *v;
};
inline IrInt operator+(IrInt x, IrInt y) { return {x.b, x.b->CreateAdd(x.v, y.v)}; }
inline IrInt operator+(IrInt x, int y) { return {x.b, x.b->CreateAdd(x.v, x.b->getInt32(uint32_t(y)))}; }
inline IrInt operator*(IrInt x, int y) { return {x.b, x.b->CreateMul(x.v, x.b->getInt32(uint32_t(y)))}; }
inline IrInt operator&(IrInt x, int y) { return {x.b, x.b->CreateAnd(x.v, uint64_t(y))}; }
inline IrInt operator^(IrInt x, IrInt y) { return {x.b, x.b->CreateXor(x.v, y.v)}; }
inline IrInt operator<<(IrInt x, int y) { return {x.b, x.b->CreateShl(x.v, uint64_t(y))}; }
inline IrInt operator>>(IrInt x, int y) { return {x.b, x.b->CreateLShr(x.v, uint64_t(y))}; }

struct ValueState {
  llvm::Value *scalar = nullptr;     // rank 0: uniform across the CTA
  std::vector<llvm::Value *> regs;   // this thread's registers, in the value's layout
  bool has_regs = false;
  llvm::Value *shared = nullptr;     // a full copy in shared memory (row-major, padded rows)
  llvm::Value *partials = nullptr;   // a reduction's per-warp partial results in shared memory
  llvm::Value *partial_index = nullptr;  // argmax/argmin: the partials' indices
  int partial_rows = 0;
  llvm::Value *staged = nullptr;     // a dot operand tile copied into shared memory by cp.async (lower_pipeline.cpp)
  int depth = 0;                     // region nesting depth where the state was made
};

// The cp.async buffers of one for_range loop's pipelined loads (lower_pipeline.cpp).
struct LoopPipeline {
  std::vector<const PipelinedLoad *> loads;
  std::vector<llvm::Value *> buffers;  // per load: num_stages tiles
  std::vector<int64_t> stage_bytes;
  std::vector<StagedLayout> layouts;
  llvm::PHINode *stage = nullptr;      // the buffer this iteration reads
  int ahead = 1;                       // iterations copied ahead: num_stages - 1, or - 2 (below)
  // The dot that keeps one wgmma group in flight into the next iteration (overlapped_dot), and
  // the index among the loop's carried values of its accumulator, waited for by the last
  // iteration (drain_overlapped_dot).
  const ir::Op *overlapped = nullptr;
  int overlapped_carry = -1;
  // Loads copied by TMA (PipelinedLoad::tensor_copy): one transaction barrier a stage, whose
  // phase completes when the stage's tensor_bytes have landed, and the parity of the phase this
  // iteration waits for (it flips each time the stages wrap around).
  bool has_tensor_copies = false, has_async_copies = false;
  llvm::Value *barriers = nullptr;
  int64_t tensor_bytes = 0;
  llvm::PHINode *phase = nullptr;
};

class GpuLowering {
 public:
  GpuLowering(const ir::Function &fn, const LayoutPlan &plan, GpuTarget &hooks, llvm::Module &m);
  LoweringResult run(const std::string &symbol);

  // --- lower_gpu.cpp: values, memory, control flow -------------------------------------
  llvm::Type *compute_type(DType t);
  llvm::Type *compute_type(const ir::Type &t);
  llvm::Type *storage_type(DType t);
  llvm::Value *from_storage(llvm::Value *v, DType t);
  llvm::Value *to_storage(llvm::Value *v, DType t);
  llvm::Value *round_to(llvm::Value *v, DType t);
  llvm::Value *constant(const ir::Type &t, int64_t i, double f);

  Index own_index(ir::ValueId v, int reg);
  const RegisterMap &registers(ir::ValueId v);
  llvm::Value *element(ir::ValueId v, const Index &idx);
  void prepare(ir::ValueId v, const Layout *reader);
  std::vector<llvm::Value *> to_regs(ir::ValueId v);
  std::vector<llvm::Value *> regs_as(ir::ValueId v, ir::ValueId like);
  llvm::Value *shared_copy(ir::ValueId v);
  llvm::Value *shared_address(llvm::Value *base, const ir::Type &t, const std::vector<llvm::Value *> &coords);
  llvm::Value *load_shared(llvm::Value *base, const ir::Type &t, const std::vector<llvm::Value *> &coords);
  void store_shared(llvm::Value *base, const ir::Type &t, const std::vector<llvm::Value *> &coords, llvm::Value *v);
  llvm::Value *allocate_shared(int64_t bytes, int64_t align = 16);
  int64_t shared_bytes_of(const ir::Type &t);
  void barrier_before_write();
  void barrier_after_write();
  llvm::Value *lane_id() { return lane_; }
  llvm::Value *warp_id() { return warp_; }
  llvm::Value *thread_coordinate(const Layout &l, int axis);

  template <class F>
  void when(llvm::Value *cond, F &&then);

  // --- element_ops.cpp: one element of an elementwise or view op ---------------------------
  llvm::Value *compute(const ir::Op &op, const Index &idx);
  llvm::Value *cast(llvm::Value *v, DType from, DType to);

  // --- lower_memory.cpp: loads, stores, atomics ------------------------------------------
  void emit_load(const ir::Op &op);
  void emit_store(const ir::Op &op);
  void emit_tile_store(const ir::Op &op);  // lower_tile_store.cpp
  void emit_atomic(const ir::Op &op);

  // --- lower_control.cpp: ops in order, for, if, the kernel function ------------------------
  void emit_op(const ir::Op &op);
  void emit_region(const ir::Region &r);
  void emit_for(const ir::Op &op);
  void emit_if(const ir::Op &op);
  void bind_argument(const ir::Argument &a, llvm::Value *param);
  void set_regs(ir::ValueId v, std::vector<llvm::Value *> regs);
  void set_scalar(ir::ValueId v, llvm::Value *s);

  // --- lower_reduce.cpp / lower_dot.cpp (matrix instructions: GpuTarget::matrix_dot) ---------------------------------------
  void emit_reduce(const ir::Op &op);
  llvm::Value *read_partials(ir::ValueId v, const Index &idx);
  // --- lower_scan.cpp: inclusive scans (shuffles, then shared memory across warps), gather ----
  void emit_scan(const ir::Op &op);
  void emit_gather(const ir::Op &op);
  // --- lower_debug.cpp: device_print and device_assert, per thread, through the target's hooks --
  void emit_print(const ir::Op &op);
  void emit_assert(const ir::Op &op);
  llvm::Value *program_id(int axis) { return pid_[size_t(axis)]; }
  llvm::Value *thread_index() { return tid_; }
  void emit_dot(const ir::Op &op);
  void emit_dot4(const ir::Op &op);  // lower_dot4.cpp: through GpuTarget::dot4
  // stage_operand.cpp: a dot operand's registers into a shared tile for the matrix-dot hooks
  // (in `layout`, x's rows as the tile's rows or, transposed, its columns), without barriers;
  // the address of (row, column in bytes) of such a tile.
  void stage_operand(ir::ValueId x, const std::vector<llvm::Value *> &regs, llvm::Value *base, const StagedLayout &layout, bool transpose);
  llvm::Value *staged_address(llvm::Value *base, const StagedLayout &layout, llvm::Value *row, llvm::Value *col_bytes);

  // --- lower_pipeline.cpp: loads feeding tensor-core dots copied ahead with cp.async ----------
  // Called by emit_for: before the loop (allocate, copy the first num_stages - 1 iterations;
  // false: nothing pipelined), in the loop header (the stage phi), at the top of the body
  // (wait for this iteration's copies, copy iteration + num_stages - 1) and in the latch.
  bool pipeline_prologue(const ir::Op &loop, llvm::Value *lo, llvm::Value *hi, llvm::Value *step);
  void pipeline_header(const ir::Op &loop, llvm::BasicBlock *pre);
  void pipeline_body(const ir::Op &loop, llvm::Value *iv, llvm::Value *hi, llvm::Value *step);
  void pipeline_latch(const ir::Op &loop, llvm::BasicBlock *latch);
  bool rows_readable(ir::ValueId v, const Layout *reader);
  int row_register(ir::ValueId v, int row_offset);
  bool keeps_rows(const ir::Op &view, ir::ValueId operand);
  std::vector<ir::ValueId> body_scalars_of(const PipelinedLoad &p);
  std::vector<ir::ValueId> stage_invariant_operands(const ir::Op &loop);
  bool reads_by_descriptor(const std::vector<const PipelinedLoad *> &loads);
  const ir::Op *overlapped_dot(const ir::Op &loop, const std::vector<const PipelinedLoad *> &loads, int &carry);
  bool dot_overlaps(const ir::Op &dot) const;
  bool overlaps_iterations(const ir::Op &loop) const { return pipelines_.count(&loop) && pipelines_.at(&loop).overlapped; }
  llvm::BasicBlock *drain_overlapped_dot(const ir::Op &loop, llvm::Value *iv_next, llvm::Value *hi, llvm::BasicBlock *head,
                                         std::vector<std::vector<llvm::Value *>> &next);
  void copy_tile_async(const PipelinedLoad &p, llvm::Value *iv, llvm::Value *buffer, const StagedLayout &layout);
  void copy_tile_tensor(const PipelinedLoad &p, llvm::Value *iv, llvm::Value *buffer, const StagedLayout &layout, llvm::Value *barrier);
  void copy_stage(const LoopPipeline &pl, llvm::Value *iv, llvm::Value *hi, llvm::Value *stage);
  template <class F>
  void at_iteration(const PipelinedLoad &p, llvm::Value *iv, F &&body);
  llvm::Value *stage_tile(const LoopPipeline &pl, size_t load, llvm::Value *stage);
  llvm::Value *stage_barrier(const LoopPipeline &pl, llvm::Value *stage);
  void wait_for_phase(llvm::Value *barrier, llvm::Value *parity);
  void pipeline_exit(const ir::Op &loop);
  // The kernel's TMA tensor maps (LoweringResult::tensor_maps), their parameters, and the map
  // each tile load copied by TMA reads or each tile store writes.
  std::vector<TensorMapSpec> tensor_maps_;
  std::vector<llvm::Value *> tensor_map_params_;
  std::map<const ir::Op *, int> tensor_map_of_;
  void plan_tensor_maps();
  std::map<const ir::Op *, LoopPipeline> pipelines_;

  const ir::Function &fn_;
  const LayoutPlan &plan_;
  GpuTarget &hooks_;           // what differs per GPU vendor
  const TargetInfo &target_;  // hooks_.info()
  llvm::Module &m_;
  llvm::LLVMContext &ctx_;
  llvm::IRBuilder<> b_;
  GpuElements el_;  // what each element of an elementwise op computes (shared with the host)
  std::vector<ValueState> state_;
  std::vector<const ir::Op *> def_;
  std::map<std::string, std::vector<llvm::Value *>> thread_coords_;  // per layout and axis
  std::map<ir::ValueId, RegisterMap> register_maps_;
  llvm::Instruction *prologue_end_ = nullptr;  // thread coordinates are computed before this
  llvm::Value *tid_ = nullptr, *lane_ = nullptr, *warp_ = nullptr;
  std::array<llvm::Value *, 3> pid_{}, grid_{};
  llvm::GlobalVariable *shared_base_ = nullptr;  // dynamic shared memory (LDS), sized at launch
  llvm::Value *shared_origin_ = nullptr;         // where allocations count from: the base, or its first 1024-byte boundary (swizzled tiles)
  bool plan_uses_descriptor_operands() const;
  // Shared memory is a stack: a region's allocations (the loop's pipeline buffers, staged dot
  // operands, layout conversions inside it) are released when the region ends, and the kernel
  // asks for the peak. Every shared write is preceded by barrier_before_write, so space reused
  // after a region is not written while another thread may still read its old contents.
  int64_t shared_top_ = 0, shared_peak_ = 0;
  bool shared_dirty_ = false;  // shared memory was read since the last barrier
  int depth_ = 0;
  std::vector<std::pair<ir::ValueId, int>> shared_made_;  // copies made inside nested regions
  int threads_ = 0;
};

template <class F>
void GpuLowering::when(llvm::Value *cond, F &&then) {
  llvm::Function *f = b_.GetInsertBlock()->getParent();
  llvm::BasicBlock *yes = llvm::BasicBlock::Create(ctx_, "then", f);
  llvm::BasicBlock *done = llvm::BasicBlock::Create(ctx_, "endif", f);
  b_.CreateCondBr(cond, yes, done);
  b_.SetInsertPoint(yes);
  then();
  b_.CreateBr(done);
  b_.SetInsertPoint(done);
}

}  // namespace kdsl::codegen::gpu
