// value_ranges.h - the interval every element of an integer block lies in, proved from the ops that make it (masks, shifts, ors, constants): what lets a lowering choose a narrower instruction
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "ir/ir.h"

namespace kdsl::ir {

// Inclusive bounds on a value's elements, as the integers they stand for (u8 255 is 255).
struct ValueRange {
  int64_t lo = 0, hi = 0;
  bool within(int64_t low, int64_t high) const { return low <= lo && hi <= high; }
};

// Intervals for the integer values of one function (i8, u8, i16, i32, u32; not i64, whose
// sums could overflow the bounds' own type, nor bool). Anything the rules below do not prove
// gets its type's whole range: loads, arguments, values carried through loops, and results
// that could wrap. Only the ops whose bounds follow from their operands' alone are read:
// constants, views, and, or, shifts by a bounded amount, add, sub, min, max, select, casts.
class ValueRanges {
 public:
  explicit ValueRanges(const Function &fn);
  // nullopt for a value that is not such an integer block.
  std::optional<ValueRange> of(ValueId v) const;

 private:
  ValueRange compute(ValueId v) const;

  const Function &fn_;
  std::vector<const Op *> def_;
  mutable std::vector<std::optional<ValueRange>> known_;
};

}  // namespace kdsl::ir
