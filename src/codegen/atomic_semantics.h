// atomic_semantics.h - one element of each atomic op (add, max, min, exchange, compare-and-swap), shared by the host and GPU lowerings
#pragma once
#include <llvm/IR/IRBuilder.h>

#include "ir/ir.h"

namespace kdsl::codegen {

// Emits the atomic update of *ptr by one element and returns the value seen before it. Atomic
// element types (f32, i32, u32, i64) compute as they are stored, so value, compare and the
// result are in both. Every atomic is monotonic (relaxed), as memory.h documents.
//
// f32 max and min order the bits in sign-magnitude order (memory.h) with integer atomics:
// a value with the sign bit clear is larger than every stored number with the sign bit set,
// and among such values the signed integer order of the bits is the float order, so
// max(*p, v) is a signed integer max; with the sign bit set, the unsigned order of the bits
// is the reverse of the float order, so max(*p, v) is an unsigned integer min. (Min swaps
// the two.) No CAS loop, and the same rule on every backend, NaNs included.
// `compare` is used by AtomicCas only (f32 compared as bits).
llvm::Value *emit_atomic_update(llvm::IRBuilder<> &b, OpKind kind, DType elem, llvm::Value *ptr, llvm::Value *value, llvm::Value *compare = nullptr);

}  // namespace kdsl::codegen
