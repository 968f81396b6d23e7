// i16_pair_sums.h - after O3 on the host: dot4's vpmaddubsw results added in i16 before one vpmaddwd where their proved bounds allow, as llama.cpp's AVX2 kernels add them
#pragma once

namespace llvm {
class Module;
class CallInst;
}  // namespace llvm

namespace kdsl::codegen {

// Marks a vpmaddubsw call with the largest magnitude any of its i16 pair sums can take (from
// the operands' proved bounds), which is what lets sum_pair_products_in_i16 add it to others.
void mark_pair_bound(llvm::CallInst &maddubs, int bound);

// dot4 on AVX2 without VNNI is vpmaddubsw (i16 sums of pairs) then vpmaddwd by ones (i32
// sums of 4), one multiply-port instruction each. Where i32 sums of that kind are added
// together (a dot4 chained into another's accumulator: Q4_K's two halves of a sub-block), the
// pair sums are added first in i16 (vpaddw), widened once: one vpmaddwd for the group instead
// of one each. Each pair sum is added to the group's running sum where it is made, so that
// the group holds one vector between its vpmaddubsw. Exact: a group's marked bounds add up to
// at most 32767, so no i16 lane wraps, and vpmaddwd by ones of a sum is the sum of the
// vpmaddwd. Returns the vpmaddwd removed.
int sum_pair_products_in_i16(llvm::Module &m);

}  // namespace kdsl::codegen
