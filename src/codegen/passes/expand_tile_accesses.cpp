// expand_tile_accesses.cpp - a TileLoad or TileStore as arange, broadcasts, pointer arithmetic and a masked load or store
#include "codegen/passes/expand_tile_accesses.h"

namespace kdsl::passes {
namespace {

using ir::Shape;
using ir::Type;
using ir::ValueId;

// Appends ops to `out`, each defining one new value of `fn`.
class Emitter {
 public:
  Emitter(ir::Function &fn, std::vector<ir::Op> &out) : fn_(fn), out_(out) {}

  ValueId op(OpKind kind, Type type, std::vector<ValueId> operands, std::vector<int64_t> ints = {}) {
    ir::Op o;
    o.kind = kind;
    o.operands = std::move(operands);
    o.ints = std::move(ints);
    o.results = {fn_.new_value(type)};
    out_.push_back(std::move(o));
    return out_.back().results[0];
  }
  ValueId i32_constant(int64_t v, Shape shape) { return op(OpKind::Constant, Type{DType::I32, false, shape}, {}, {v}); }
  // A scalar (rank 0) brought to a 2-D `shape` through [1, 1].
  ValueId broadcast_scalar(ValueId s, Shape shape) {
    const Type t = fn_.type(s);  // a copy: new values may move fn_.values
    ValueId one = op(OpKind::ExpandDims, t.with_shape(Shape{1}), {s}, {0});
    ValueId one_one = op(OpKind::ExpandDims, t.with_shape(Shape{1, 1}), {one}, {1});
    return shape == Shape{1, 1} ? one_one : op(OpKind::Broadcast, t.with_shape(shape), {one_one});
  }
  ValueId broadcast(ValueId v, Shape shape) {
    const Type t = fn_.type(v);
    return t.shape == shape ? v : op(OpKind::Broadcast, t.with_shape(shape), {v});
  }
  // a (kind) b, of a's type: i32 indices, i64 offsets.
  ValueId arith(OpKind kind, ValueId a, ValueId b) { return op(kind, Type(fn_.type(a)), {a, b}); }
  ValueId boolean(OpKind kind, ValueId a, ValueId b) { return op(kind, Type{DType::Bool, false, fn_.type(a).shape}, {a, b}); }

 private:
  ir::Function &fn_;
  std::vector<ir::Op> &out_;
};

// Index `start + i` along one axis of the tile ([R, 1] for rows, [1, C] for columns), and
// whether it lies in [0, extent).
struct AxisIndex {
  ValueId index, inside;
};

AxisIndex axis_index(Emitter &e, ValueId start, ValueId extent, int64_t n, int axis) {
  const Shape shape = axis == 0 ? Shape{n, 1} : Shape{1, n};
  ValueId range = e.op(OpKind::Arange, Type{DType::I32, false, Shape{n}}, {}, {0, n});
  ValueId along = e.op(OpKind::ExpandDims, Type{DType::I32, false, shape}, {range}, {1 - axis});
  ValueId index = e.arith(OpKind::Add, e.broadcast_scalar(start, shape), along);
  ValueId inside = e.boolean(OpKind::And, e.boolean(OpKind::CmpGe, index, e.i32_constant(0, shape)),
                             e.boolean(OpKind::CmpLt, index, e.broadcast_scalar(extent, shape)));
  return {index, inside};
}

// The tile's pointers and its in-bounds mask, both [R, C] (`shape`).
struct TilePointers {
  ValueId pointers, mask;
};

// The offsets are i64: a tensor's rows x row_stride may pass 2^31 elements (the indices and
// extents, i32 arguments, do not), and TMA's own addressing has no such limit either.
// A 3-D tensor's plane moves the base by plane * plane_stride (a scalar, i64) and puts the
// whole tile outside the tensor where the plane is not in [0, planes).
// `shape` by value: new values move fn.values, which a reference to a type's shape would point into.
TilePointers tile_pointers(Emitter &e, ir::Function &fn, const ir::Op &tile, const Shape shape) {
  const ValueId rows = tile.operands[1], cols = tile.operands[2], stride = tile.operands[3];
  ValueId base = tile.operands[0];
  AxisIndex r = axis_index(e, tile.operands[4], rows, shape[0], 0);
  AxisIndex c = axis_index(e, tile.operands[5], cols, shape[1], 1);
  auto wide = [&](ValueId v) { return e.op(OpKind::Cast, Type{DType::I64, false, fn.type(v).shape}, {v}); };
  ValueId row_offset = e.arith(OpKind::Mul, wide(r.index), wide(e.broadcast_scalar(stride, Shape{shape[0], 1})));
  ValueId offset = e.arith(OpKind::Add, e.broadcast(row_offset, shape), e.broadcast(wide(c.index), shape));
  ValueId mask = e.boolean(OpKind::And, e.broadcast(r.inside, shape), e.broadcast(c.inside, shape));
  if (const int p = ir::tile_plane_operand(tile); p >= 0) {
    const ValueId planes = tile.operands[size_t(p)], plane_stride = tile.operands[size_t(p) + 1], plane = tile.operands[size_t(p) + 2];
    const Shape scalar{};
    base = e.op(OpKind::PtrAdd, fn.type(base), {base, e.arith(OpKind::Mul, wide(plane), wide(plane_stride))});
    ValueId inside = e.boolean(OpKind::And, e.boolean(OpKind::CmpGe, plane, e.i32_constant(0, scalar)), e.boolean(OpKind::CmpLt, plane, planes));
    mask = e.boolean(OpKind::And, mask, e.broadcast_scalar(inside, shape));
  }
  ValueId pointers = e.op(OpKind::PtrAdd, fn.type(base).with_shape(shape), {e.broadcast_scalar(base, shape), offset});
  return {pointers, mask};
}

void expand_load(ir::Function &fn, const ir::Op &tile, std::vector<ir::Op> &out) {
  Emitter e(fn, out);
  const Type result = fn.type(tile.results[0]);
  TilePointers p = tile_pointers(e, fn, tile, result.shape);
  ir::Op zero;
  zero.kind = OpKind::Constant;
  if (!is_float(result.elem)) zero.ints = {0};
  zero.results = {fn.new_value(result)};
  ValueId other = zero.results[0];
  out.push_back(std::move(zero));
  ir::Op load;
  load.kind = OpKind::Load;
  load.operands = {p.pointers, p.mask, other};
  load.results = tile.results;
  out.push_back(std::move(load));
}

void expand_store(ir::Function &fn, const ir::Op &tile, std::vector<ir::Op> &out) {
  Emitter e(fn, out);
  const ValueId value = tile.operands[6];
  TilePointers p = tile_pointers(e, fn, tile, fn.type(value).shape);
  ir::Op store;
  store.kind = OpKind::Store;
  store.operands = {p.pointers, value, p.mask};
  out.push_back(std::move(store));
}

void expand_region(ir::Function &fn, ir::Region &region, const std::function<bool(const ir::Op &)> &keep) {
  std::vector<ir::Op> ops;
  ops.reserve(region.ops.size());
  for (ir::Op &op : region.ops) {
    for (ir::Region &inner : op.regions) expand_region(fn, inner, keep);
    const bool expanded = (op.kind == OpKind::TileLoad || op.kind == OpKind::TileStore) && !(keep && keep(op));
    if (expanded && op.kind == OpKind::TileLoad) expand_load(fn, op, ops);
    else if (expanded) expand_store(fn, op, ops);
    else ops.push_back(std::move(op));
  }
  region.ops = std::move(ops);
}

}  // namespace

void expand_tile_accesses(ir::Function &fn, const std::function<bool(const ir::Op &)> &keep) { expand_region(fn, fn.body, keep); }

}  // namespace kdsl::passes
