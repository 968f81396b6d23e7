// value_ranges.cpp - interval bounds of integer values from the ops that compute them
#include "ir/value_ranges.h"

#include <algorithm>
#include <bit>

namespace kdsl::ir {
namespace {

bool ranged(DType t) { return is_integer(t) && t != DType::Bool && dtype_bytes(t) <= 4; }

ValueRange whole(DType t) {
  const int bits = 8 * dtype_bytes(t);
  if (is_unsigned(t)) return {0, (int64_t(1) << bits) - 1};
  return {-(int64_t(1) << (bits - 1)), (int64_t(1) << (bits - 1)) - 1};
}

// A constant's integer as its type reads it (the tracer may hold u8 255 as -1).
int64_t as_typed(int64_t v, DType t) {
  const int bits = 8 * dtype_bytes(t);
  const uint64_t mask = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  const uint64_t u = uint64_t(v) & mask;
  if (is_unsigned(t) || bits == 64 || !(u >> (bits - 1))) return int64_t(u);
  return int64_t(u | ~mask);
}

// The smallest 2^k - 1 at or above x (x >= 0): a bound on any or of values up to x.
int64_t ones_above(int64_t x) { return x == 0 ? 0 : int64_t(std::bit_ceil(uint64_t(x) + 1) - 1); }

}  // namespace

ValueRanges::ValueRanges(const Function &fn) : fn_(fn), def_(fn.values.size(), nullptr), known_(fn.values.size()) {
  walk(fn.body, [&](const Op &op) {
    for (ValueId r : op.results) def_[size_t(r)] = &op;
  });
}

std::optional<ValueRange> ValueRanges::of(ValueId v) const {
  const Type &t = fn_.type(v);
  if (t.is_ptr || !ranged(t.elem)) return std::nullopt;
  if (!known_[size_t(v)]) known_[size_t(v)] = compute(v);
  return known_[size_t(v)];
}

ValueRange ValueRanges::compute(ValueId v) const {
  const DType elem = fn_.type(v).elem;
  const ValueRange all = whole(elem);
  const Op *op = def_[size_t(v)];
  if (!op || op->results.size() != 1) return all;
  // An operand's range where it is an integer of this kind; the whole type's otherwise.
  auto operand = [&](size_t i) { return of(op->operands[i]).value_or(all); };
  auto fits = [&](ValueRange r) { return r.within(all.lo, all.hi) ? r : all; };
  switch (op->kind) {
    case OpKind::Constant: {
      if (op->ints.empty()) return all;
      const int64_t c = as_typed(op->ints[0], elem);
      return {c, c};
    }
    case OpKind::Broadcast:
    case OpKind::ExpandDims:
    case OpKind::Reshape:
    case OpKind::Trans: return operand(0);
    case OpKind::And: {
      // x & m with m >= 0 lies in [0, m], whatever x is.
      const ValueRange a = operand(0), b = operand(1);
      if (a.lo >= 0 && b.lo >= 0) return {0, std::min(a.hi, b.hi)};
      if (a.lo >= 0) return {0, a.hi};
      if (b.lo >= 0) return {0, b.hi};
      return all;
    }
    case OpKind::Or: {
      const ValueRange a = operand(0), b = operand(1);
      if (a.lo < 0 || b.lo < 0) return all;
      return fits({std::max(a.lo, b.lo), ones_above(std::max(a.hi, b.hi))});
    }
    case OpKind::Shr: {
      // Logical for unsigned, arithmetic for signed: either way monotone in both operands
      // over a non-negative shift, so the extremes are at the corners.
      const ValueRange x = operand(0), s = operand(1);
      const int bits = 8 * dtype_bytes(elem);
      if (s.lo < 0 || s.hi >= bits) return all;
      return {std::min(x.lo >> s.lo, x.lo >> s.hi), std::max(x.hi >> s.lo, x.hi >> s.hi)};
    }
    case OpKind::Shl: {
      const ValueRange x = operand(0), s = operand(1);
      const int bits = 8 * dtype_bytes(elem);
      if (x.lo < 0 || s.lo < 0 || s.hi >= bits) return all;
      return fits({x.lo << s.lo, x.hi << s.hi});
    }
    case OpKind::Add: {
      const ValueRange a = operand(0), b = operand(1);
      return fits({a.lo + b.lo, a.hi + b.hi});
    }
    case OpKind::Sub: {
      const ValueRange a = operand(0), b = operand(1);
      return fits({a.lo - b.hi, a.hi - b.lo});
    }
    case OpKind::Min: {
      const ValueRange a = operand(0), b = operand(1);
      return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    }
    case OpKind::Max: {
      const ValueRange a = operand(0), b = operand(1);
      return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    case OpKind::Select: {
      const ValueRange a = operand(1), b = operand(2);
      return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    case OpKind::Gather: {  // src's elements, or 0 for an index outside it
      const ValueRange r = operand(0);
      return {std::min<int64_t>(r.lo, 0), std::max<int64_t>(r.hi, 0)};
    }
    case OpKind::Cast: {
      // An integer that fits the new type keeps its value; anything else may wrap or round.
      const std::optional<ValueRange> from = of(op->operands[0]);
      return from ? fits(*from) : all;
    }
    default: return all;
  }
}

}  // namespace kdsl::ir
