// storage_plan.h - decides, per block value, whether the host code stores it or fuses it into its users
#pragma once
#include <vector>

#include "ir/ir.h"

namespace kdsl::codegen {

enum class Storage : uint8_t {
  Scalar,  // rank 0: an SSA value computed where it is defined
  Array,   // a stack array written by one loop nest
  Fused,   // recomputed inside each consumer's loop, at the consumer's index
};

struct StoragePlan {
  std::vector<Storage> storage;     // by ValueId
  std::vector<const ir::Op *> def;  // defining op by ValueId (null for arguments and region args)
  // Loop-carried updates done in place: a value that is the next value of carried argument
  // `write_into[v]`, computed from that argument's old value at the same index only (acc + x,
  // or dot(a, b, acc)) and used nowhere else, is written straight into the carried storage.
  // A dot whose accumulator is an earlier dot's result used by it alone writes into that
  // dot's array too (write_into names that result).
  std::vector<ir::ValueId> write_into;  // by ValueId; kNoValue when not in place
  // Reductions of a whole 1-D value computed in the loop that writes the value (softmax's
  // max and sum ride along with the load and the exp), saving a pass over the block.
  std::vector<std::vector<const ir::Op *>> reductions_in_loop;  // by ValueId of the reduced value
};

// The lanes of a block in rows of lanes: an f32 or i32 value whose last axis is short (2 to
// 16, a power of two), as dot4's [.., 4] sums and a kernel's lane accumulators are, or a byte
// value whose last axis is 8 to 32 (a power of two), as a quant block's nibbles are; 0 for any
// other. The host lowering computes such values a row vector at a time (lower_host.cpp).
unsigned lane_count(const ir::Type &t);

// Fuses index arithmetic always (integer, boolean and pointer elementwise ops, views, ranges,
// constants; not integer data such as dot4's sums, which are computed where they are defined);
// fuses a float op or a load into its single elementwise consumer in the same
// region (a load only when no store, atomic or nested region runs between its place in the
// program and the place it is evaluated, and never into a chain ending in a store, whose
// loop could overwrite elements the load has yet to read); materializes everything else.
StoragePlan plan_storage(const ir::Function &fn);

}  // namespace kdsl::codegen
