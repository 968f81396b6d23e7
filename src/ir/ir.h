// ir.h - the block-level SSA IR: types, values, ops with nested regions, functions
#pragma once
#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <kdsl/detail/op_kind.h>
#include <kdsl/dtype.h>

namespace kdsl::ir {

constexpr int kMaxRank = 4;

// A block shape: up to kMaxRank extents, row-major. Rank 0 is a scalar.
struct Shape {
  std::array<int64_t, kMaxRank> dims{};
  int rank = 0;

  Shape() = default;
  Shape(std::initializer_list<int64_t> d);
  static Shape from(const std::vector<int64_t> &d);
  int64_t operator[](int i) const { return dims[i]; }
  int64_t &operator[](int i) { return dims[i]; }
  int64_t numel() const;
  std::vector<int64_t> vec() const { return {dims.begin(), dims.begin() + rank}; }
  bool operator==(const Shape &o) const;
  std::string str() const;  // "[64, 32]"
};

// The type of a value: a block (or scalar) of an element type, or of pointers to one.
struct Type {
  DType elem = DType::F32;  // for pointers: the pointee
  bool is_ptr = false;
  Shape shape;

  bool operator==(const Type &o) const { return elem == o.elem && is_ptr == o.is_ptr && shape == o.shape; }
  bool operator!=(const Type &o) const { return !(*this == o); }
  bool is_scalar() const { return shape.rank == 0; }
  Type with_shape(Shape s) const { return {elem, is_ptr, s}; }
  Type with_elem(DType e) const { return {e, false, shape}; }
  std::string str() const;  // "f32[64, 32]", "ptr<f16>", "i1[128]"
};

using kdsl::OpKind;

enum OpTrait : uint8_t { PURE = 0, ELEMENTWISE = 1, VIEW = 2, EFFECT = 4, REGIONS = 8 };

const char *op_name(OpKind k);
int op_operand_count(OpKind k);  // -1: variable
uint8_t op_traits(OpKind k);
inline bool is_elementwise(OpKind k) { return op_traits(k) & ELEMENTWISE; }
inline bool is_view(OpKind k) { return op_traits(k) & VIEW; }
inline bool has_effect(OpKind k) { return op_traits(k) & EFFECT; }
inline bool has_regions(OpKind k) { return op_traits(k) & REGIONS; }

using ValueId = int32_t;
constexpr ValueId kNoValue = -1;

struct Op;

// A list of ops with arguments (a loop body's induction variable and carried values).
struct Region {
  std::vector<ValueId> args;
  std::vector<Op> ops;
};

struct Op {
  OpKind kind{};
  std::vector<ValueId> operands;
  std::vector<ValueId> results;
  std::vector<int64_t> ints;  // axis, permutation, arange bounds, integer constant
  double fval = 0;            // floating constant
  std::string text;           // device_print's label, device_assert's message
  std::vector<Region> regions;
};

// What launch-time specialization proved about a kernel argument (as Triton does).
enum class ArgClass : uint8_t {
  None,         // nothing known
  Divisible16,  // integer divisible by 16, or pointer aligned to 16 bytes
  EqualToOne,   // integer equal to 1: folded to a constant
};

struct Argument {
  std::string name;  // "arg0", or a name the user gave
  ValueId value = kNoValue;
  ArgClass spec = ArgClass::None;
};

struct Function {
  std::string name;
  std::vector<Type> values;  // type of every value, indexed by ValueId
  std::vector<Argument> args;
  Region body;

  ValueId new_value(const Type &t) {
    values.push_back(t);
    return ValueId(values.size() - 1);
  }
  const Type &type(ValueId v) const { return values.at(size_t(v)); }
};

// Visits every op, outer first, including those in nested regions.
template <class F>
void walk(Region &r, F &&f) {
  for (Op &op : r.ops) {
    f(op);
    for (Region &inner : op.regions) walk(inner, f);
  }
}
template <class F>
void walk(const Region &r, F &&f) {
  for (const Op &op : r.ops) {
    f(op);
    for (const Region &inner : op.regions) walk(inner, f);
  }
}

// The values a region defines: its arguments and the results of every op in it, nested
// regions' ops included (a loop body's values, against those it reads from outside).
std::set<ValueId> defined_in(const Region &r);

// Does the op write memory (store and the atomics)?
bool writes_memory(OpKind k);
inline bool is_atomic(OpKind k) {
  return k == OpKind::AtomicAdd || k == OpKind::AtomicMax || k == OpKind::AtomicMin || k == OpKind::AtomicXchg || k == OpKind::AtomicCas;
}
inline bool is_scan(OpKind k) { return k == OpKind::ScanSum || k == OpKind::ScanMax || k == OpKind::ScanMin; }
inline bool is_reduction(OpKind k) {
  return k == OpKind::ReduceSum || k == OpKind::ReduceMax || k == OpKind::ReduceMin || k == OpKind::ArgMax || k == OpKind::ArgMin;
}

// Is the i-th operand of `op` a block whose elements it reads once each, at the same index
// as the result element (so a producer can be fused into the consumer's loop)?
bool reads_operand_elementwise(const Op &op, size_t operand);

// A Dot's ints: empty for IEEE products, {kDotTf32} where it asked for TF32
// (int64_t(DotPrecision::TF32), include/kdsl/reduce.h; the tracer checks the two agree).
constexpr int64_t kDotTf32 = 1;
inline bool is_tf32_dot(const Op &op) { return op.kind == OpKind::Dot && op.ints.size() == 1 && op.ints[0] == kDotTf32; }

// A TileLoad's or TileStore's operands: (base, rows, cols, row_stride, row, col), the
// store's value, then for a 3-D tensor (planes, plane_stride, plane). The index of `planes`,
// or -1 for a 2-D tensor.
inline int tile_plane_operand(const Op &op) {
  const size_t first = op.kind == OpKind::TileStore ? 7 : 6;
  return op.operands.size() == first + 3 ? int(first) : -1;
}

}  // namespace kdsl::ir
