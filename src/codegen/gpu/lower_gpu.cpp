// lower_gpu.cpp - block IR to LLVM IR for a GPU: per-thread registers, shared memory, control flow
#include "codegen/gpu/lower_gpu.h"

#include <fmt/format.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>

#include <kdsl/error.h>

#include "codegen/gpu/gpu_lowering.h"
#include "codegen/host/element_math.h"

namespace kdsl::codegen::gpu {

// Index arithmetic is recomputed wherever it is read (as the host lowering fuses it), so
// views of it never need shared memory and LLVM sees affine addresses.
bool is_index_math(const ir::Op &op, const ir::Type &t) {
  switch (op.kind) {
    case OpKind::Constant: case OpKind::Arange: case OpKind::ProgramId: case OpKind::NumPrograms:
      return true;
    default:
      break;
  }
  if (ir::is_view(op.kind)) return true;
  return ir::is_elementwise(op.kind) && (t.is_ptr || !is_float(t.elem));
}

GpuLowering::GpuLowering(const ir::Function &fn, const LayoutPlan &plan, GpuTarget &hooks, llvm::Module &m)
    : fn_(fn), plan_(plan), hooks_(hooks), target_(hooks.info()), m_(m), ctx_(m.getContext()), b_(ctx_), el_(b_, m, hooks) {
  state_.assign(fn.values.size(), {});
  def_.assign(fn.values.size(), nullptr);
  ir::walk(fn.body, [&](const ir::Op &op) {
    for (ir::ValueId r : op.results) def_[size_t(r)] = &op;
  });
  threads_ = plan.num_warps * target_.warp_size;
}

// --- types --------------------------------------------------------------------------------

llvm::Type *GpuLowering::compute_type(DType t) { return el_.compute_type(t); }
llvm::Type *GpuLowering::compute_type(const ir::Type &t) { return el_.compute_type(t); }
llvm::Type *GpuLowering::storage_type(DType t) { return el_.storage_type(t); }
llvm::Value *GpuLowering::from_storage(llvm::Value *v, DType t) { return el_.from_storage(v, t); }
llvm::Value *GpuLowering::to_storage(llvm::Value *v, DType t) { return el_.to_storage(v, t); }
llvm::Value *GpuLowering::round_to(llvm::Value *v, DType t) { return el_.round_to(v, t); }
llvm::Value *GpuLowering::constant(const ir::Type &t, int64_t i, double f) { return el_.constant(t, i, f); }

// --- where a thread's elements are ----------------------------------------------------------

// This thread's first coordinate along `axis` of layout l (layout.h: thread_offset).
// Computed once per layout, in the prologue.
llvm::Value *GpuLowering::thread_coordinate(const Layout &l, int axis) {
  std::vector<llvm::Value *> &cached = thread_coords_[l.str()];
  if (cached.empty()) {
    llvm::IRBuilder<> pb(prologue_end_);
    cached.resize(size_t(l.rank));
    for (int d = 0; d < l.rank; ++d) {
      cached[size_t(d)] = thread_offset(l, d, IrInt{&pb, lane_}, IrInt{&pb, warp_}).v;
      cached[size_t(d)]->setName(fmt::format("base{}", d));
    }
  }
  return cached[size_t(axis)];
}

const RegisterMap &GpuLowering::registers(ir::ValueId v) {
  auto it = register_maps_.find(v);
  if (it == register_maps_.end()) it = register_maps_.emplace(v, register_map(plan_.layout[size_t(v)], fn_.type(v).shape)).first;
  return it->second;
}

Index GpuLowering::own_index(ir::ValueId v, int reg) {
  const Layout &l = plan_.layout[size_t(v)];
  const ir::Shape &s = fn_.type(v).shape;
  const RegisterMap &map = registers(v);
  Index idx;
  idx.layout = &l;
  idx.shape = &s;
  idx.reg = reg;
  idx.axis_valid.assign(size_t(s.rank), nullptr);
  for (int d = 0; d < s.rank; ++d) {
    int64_t tile = l.tile(l.field_axis(d)), extent = s[d];
    llvm::Value *raw = b_.CreateAdd(thread_coordinate(l, d), b_.getInt32(uint32_t(map.offset[size_t(reg)][size_t(d)])));
    int64_t reps = (extent + tile - 1) / tile;
    if (reps * tile != extent) {  // the layout covers more than the block: wrap, mark duplicates
      llvm::Value *inside = b_.CreateICmpULT(raw, b_.getInt32(uint32_t(extent)));
      idx.valid = idx.valid ? b_.CreateAnd(idx.valid, inside) : inside;
      idx.axis_valid[size_t(d)] = inside;
      raw = (extent & (extent - 1)) == 0 ? b_.CreateAnd(raw, uint64_t(extent - 1)) : b_.CreateURem(raw, b_.getInt32(uint32_t(extent)));
    }
    idx.coords.push_back(raw);
  }
  if (s.rank >= 1 && !idx.axis_valid[0]) {
    idx.row_layout = &l;
    idx.row_offset = map.offset[size_t(reg)][0];
  }
  return idx;
}

// Whether the register value `v`, a row vector in a Slice of its rows (layout.h), can be read
// by a reader in `reader` at rows the reader's own registers name (Index::row_layout).
bool GpuLowering::rows_readable(ir::ValueId v, const Layout *reader) {
  const Layout &l = plan_.layout[size_t(v)];
  return reader && l.kind == LayoutKind::Slice && l.sliced_axis == 1 && l.rank == 2 && reader->same_fields(l) && reader->sliced_axis < 0;
}

// The register of row vector `v` (rows_readable) for the row `row_offset` past this thread's
// first; -1 if the thread holds none there.
int GpuLowering::row_register(ir::ValueId v, int row_offset) {
  const RegisterMap &map = registers(v);
  for (int r = 0; r < map.count; ++r)
    if (map.offset[size_t(r)][0] == row_offset) return r;
  return -1;
}

// --- reading values ---------------------------------------------------------------------------

llvm::Value *GpuLowering::element(ir::ValueId v, const Index &idx) {
  const ir::Type &t = fn_.type(v);
  ValueState &st = state_[size_t(v)];
  if (t.shape.rank == 0) {
    if (!st.scalar) internal_error(fmt::format("GPU lowering: scalar value {} read before it was computed", v));
    return st.scalar;
  }
  if (st.has_regs && idx.layout && *idx.shape == t.shape && *idx.layout == plan_.layout[size_t(v)]) return st.regs[size_t(idx.reg)];
  if (st.has_regs && idx.row_layout && rows_readable(v, idx.row_layout))
    if (int r = row_register(v, idx.row_offset); r >= 0) return st.regs[size_t(r)];
  if (st.shared) return load_shared(st.shared, t, idx.coords);
  if (st.partials) return read_partials(v, idx);
  const ir::Op *def = def_[size_t(v)];
  if (st.has_regs || !def || !is_index_math(*def, t))
    internal_error(fmt::format("GPU lowering: value {} ({}) read at another thread's element without a shared copy", v, t.str()));
  return compute(*def, idx);
}

// Makes every value `v` reads readable where it will be read: at the elements `reader`
// (a layout) gives this thread, or, with no reader, at any element. A register value held in
// another layout, or read at other threads' elements (through a view), gets a shared copy
// now, at the top level of the current region, so the barriers around it are reached by
// every thread: this is the conversion between layouts (mma accumulator to blocked, say).
void GpuLowering::prepare(ir::ValueId v, const Layout *reader) {
  const ir::Type &t = fn_.type(v);
  if (t.shape.rank == 0) return;
  ValueState &st = state_[size_t(v)];
  if (st.shared || st.partials) return;
  if (st.has_regs) {
    if (!reader || (!(*reader == plan_.layout[size_t(v)]) && !rows_readable(v, reader))) shared_copy(v);
    return;
  }
  const ir::Op *def = def_[size_t(v)];
  if (!def) return;
  bool keeps_index = ir::is_elementwise(def->kind);
  for (ir::ValueId operand : def->operands) prepare(operand, keeps_index || keeps_rows(*def, operand) ? reader : nullptr);
}

// A view that leaves axis 0 where it is (expand_dims past it, broadcast along the others) of
// a row vector in a Slice layout, or of another such view: the reader's rows are the vector's
// elements (Index::row_layout), so the reader's layout is passed on to it.
bool GpuLowering::keeps_rows(const ir::Op &view, ir::ValueId operand) {
  const ir::Op *def = def_[size_t(operand)];
  bool row_vector = plan_.layout[size_t(operand)].kind == LayoutKind::Slice || (def && ir::is_view(def->kind));
  if (!row_vector) return false;
  if (view.kind == OpKind::ExpandDims) return view.ints[0] != 0;
  if (view.kind == OpKind::Broadcast) return fn_.type(operand).shape.rank >= 1 && fn_.type(operand).shape[0] != 1;
  return false;
}

std::vector<llvm::Value *> GpuLowering::to_regs(ir::ValueId v) {
  if (fn_.type(v).shape.rank == 0) return {element(v, {})};
  ValueState &st = state_[size_t(v)];
  if (st.has_regs) return st.regs;
  prepare(v, &plan_.layout[size_t(v)]);
  std::vector<llvm::Value *> regs;
  for (int r = 0; r < registers(v).count; ++r) regs.push_back(element(v, own_index(v, r)));
  return regs;
}

// The elements of `v` at the registers `like` (same shape) holds: v's own registers when the
// layouts agree, else read through shared memory (loop-carried values, if results, dot's
// accumulator).
std::vector<llvm::Value *> GpuLowering::regs_as(ir::ValueId v, ir::ValueId like) {
  if (fn_.type(v).shape.rank == 0 || plan_.layout[size_t(v)] == plan_.layout[size_t(like)]) return to_regs(v);
  prepare(v, &plan_.layout[size_t(like)]);
  std::vector<llvm::Value *> regs;
  for (int r = 0; r < registers(like).count; ++r) regs.push_back(element(v, own_index(like, r)));
  return regs;
}

// --- shared memory ------------------------------------------------------------------------------

llvm::Value *GpuLowering::allocate_shared(int64_t bytes, int64_t align) {
  int64_t offset = (shared_top_ + align - 1) / align * align;
  shared_top_ = offset + bytes;
  shared_peak_ = std::max(shared_peak_, shared_top_);
  return b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), shared_origin_, uint64_t(offset));
}

namespace {
// Rows of rank >= 2 copies are padded by one element so column reads (transposes, dot's A
// operand) hit distinct banks.
int64_t padded_last(const ir::Shape &s) { return s[s.rank - 1] + (s.rank >= 2 && s[s.rank - 1] > 1 ? 1 : 0); }
}  // namespace

int64_t GpuLowering::shared_bytes_of(const ir::Type &t) {
  int64_t elems = t.shape.numel() / t.shape[t.shape.rank - 1] * padded_last(t.shape);
  int64_t size = t.is_ptr ? 8 : t.elem == DType::Bool ? 1 : int64_t(m_.getDataLayout().getTypeAllocSize(compute_type(t)));
  return elems * size;
}

llvm::Value *GpuLowering::shared_address(llvm::Value *base, const ir::Type &t, const std::vector<llvm::Value *> &coords) {
  llvm::Value *linear = b_.getInt32(0);
  for (int d = 0; d < t.shape.rank; ++d) {
    int64_t extent = d == t.shape.rank - 1 ? padded_last(t.shape) : t.shape[d];
    linear = b_.CreateAdd(b_.CreateMul(linear, b_.getInt32(uint32_t(extent))), coords[size_t(d)]);
  }
  llvm::Type *ty = t.elem == DType::Bool && !t.is_ptr ? b_.getInt8Ty() : compute_type(t);
  return b_.CreateInBoundsGEP(ty, base, linear);
}

llvm::Value *GpuLowering::load_shared(llvm::Value *base, const ir::Type &t, const std::vector<llvm::Value *> &coords) {
  shared_dirty_ = true;
  bool flag = t.elem == DType::Bool && !t.is_ptr;
  llvm::Value *v = b_.CreateLoad(flag ? b_.getInt8Ty() : compute_type(t), shared_address(base, t, coords));
  return flag ? b_.CreateICmpNE(v, b_.getInt8(0)) : v;
}

void GpuLowering::store_shared(llvm::Value *base, const ir::Type &t, const std::vector<llvm::Value *> &coords, llvm::Value *v) {
  if (t.elem == DType::Bool && !t.is_ptr) v = b_.CreateZExt(v, b_.getInt8Ty());
  b_.CreateStore(v, shared_address(base, t, coords));
}

void GpuLowering::barrier_before_write() {
  if (shared_dirty_) hooks_.barrier(b_);
  shared_dirty_ = false;
}
void GpuLowering::barrier_after_write() {
  hooks_.barrier(b_);
  shared_dirty_ = false;
}

llvm::Value *GpuLowering::shared_copy(ir::ValueId v) {
  ValueState &st = state_[size_t(v)];
  if (st.shared) return st.shared;
  const ir::Type &t = fn_.type(v);
  std::vector<llvm::Value *> regs = to_regs(v);
  llvm::Value *base = allocate_shared(shared_bytes_of(t));
  barrier_before_write();
  for (int r = 0; r < int(regs.size()); ++r) store_shared(base, t, own_index(v, r).coords, regs[size_t(r)]);
  barrier_after_write();
  st.shared = base;
  if (st.depth < depth_) shared_made_.emplace_back(v, depth_);  // valid only inside this region
  return base;
}

}  // namespace kdsl::codegen::gpu
