// ir.cpp - shapes, types and the op tables expanded from ops.def
#include "ir/ir.h"

#include <fmt/format.h>

#include <kdsl/error.h>

namespace kdsl::ir {

Shape::Shape(std::initializer_list<int64_t> d) {
  if (d.size() > size_t(kMaxRank)) internal_error("shape rank above kMaxRank");
  for (int64_t x : d) dims[rank++] = x;
}

Shape Shape::from(const std::vector<int64_t> &d) {
  if (d.size() > size_t(kMaxRank)) throw Error(fmt::format("block rank {} exceeds the maximum of {}", d.size(), kMaxRank));
  Shape s;
  for (int64_t x : d) s.dims[s.rank++] = x;
  return s;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[i];
  return n;
}

bool Shape::operator==(const Shape &o) const {
  if (rank != o.rank) return false;
  for (int i = 0; i < rank; ++i)
    if (dims[i] != o.dims[i]) return false;
  return true;
}

std::string Shape::str() const { return fmt::format("[{}]", fmt::join(vec(), ", ")); }

std::string Type::str() const {
  std::string s = is_ptr ? fmt::format("ptr<{}>", dtype_name(elem)) : std::string(dtype_name(elem));
  if (shape.rank) s += fmt::format("[{}]", fmt::join(shape.vec(), ","));
  return s;
}

const char *op_name(OpKind k) {
  switch (k) {
#define OP(name, text, operands, traits) \
  case OpKind::name:                     \
    return text;
#include <kdsl/detail/ops.def>
  }
  return "?";
}

int op_operand_count(OpKind k) {
  switch (k) {
#define OP(name, text, operands, traits) \
  case OpKind::name:                     \
    return operands;
#include <kdsl/detail/ops.def>
  }
  return -1;
}

uint8_t op_traits(OpKind k) {
  switch (k) {
#define OP(name, text, operands, traits) \
  case OpKind::name:                     \
    return traits;
#include <kdsl/detail/ops.def>
  }
  return 0;
}

bool writes_memory(OpKind k) { return k == OpKind::Store || is_atomic(k); }

std::set<ValueId> defined_in(const Region &r) {
  std::set<ValueId> values(r.args.begin(), r.args.end());
  walk(r, [&](const Op &op) { values.insert(op.results.begin(), op.results.end()); });
  return values;
}

bool reads_operand_elementwise(const Op &op, size_t operand) {
  if (is_elementwise(op.kind)) return true;
  switch (op.kind) {
    case OpKind::Load:
    case OpKind::Store:
    case OpKind::AtomicAdd:
    case OpKind::AtomicMax:
    case OpKind::AtomicMin:
    case OpKind::AtomicXchg:
    case OpKind::AtomicCas:
    case OpKind::Prefetch:
      return true;  // every operand is indexed like the access
    case OpKind::ReduceSum:
    case OpKind::ReduceMax:
    case OpKind::ReduceMin:
    case OpKind::ArgMax:
    case OpKind::ArgMin:
    case OpKind::ScanSum:
    case OpKind::ScanMax:
    case OpKind::ScanMin:
      return true;  // each input element is read once
    default:
      return false;
  }
}

}  // namespace kdsl::ir
