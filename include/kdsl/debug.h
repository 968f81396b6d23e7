// debug.h - printing and asserting inside a kernel: device_print (kdsl::print) and device_assert
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <kdsl/block.h>
#include <kdsl/ops.h>

namespace kdsl {

// Prints `label` and the values of blocks (and scalars) when the kernel runs, tagged with the
// program id. On the CPU each program writes one line per call to stdout, whole (lines of
// different programs never interleave mid-line):
//   pid (1, 0, 0) x: [0.5, 1, 1.5] [[1, 2], [3, 4]]
// On a GPU each thread prints its own elements through printf, one line each (as Triton):
//   pid (1, 0, 0) idx (2) x: 1.5
// A print is an effect: it stays in program order and is never optimized away, so printing
// a value inside a loop prints it at every iteration. Pointers cannot be printed (print the
// offsets that made them).
template <class... B>
void device_print(std::string_view label, const B &...values) {
  static_assert((is_block_v<B> && ...), "device_print prints blocks and scalars of the kernel (wrap a C++ number with full<T>(v))");
  static_assert((!detail::element_traits<typename B::element>::is_ptr && ...), "device_print cannot print pointers: print the offsets that made them");
  detail::emit_effect(OpKind::DevicePrint, std::vector<int32_t>{values.id()...}, {}, std::string(label));
}

// The same as device_print.
template <class... B>
void print(std::string_view label, const B &...values) {
  device_print(label, values...);
}

// Checks that every element of cond holds. On the CPU a program whose condition fails stops
// at the assert (the rest of that program does not run; other programs run to their end) and
// the launch then throws kdsl::Error naming the kernel, the program, the message and the first
// failing element's index. On a GPU the thread prints the index and calls __assertfail (the
// CUDA assert: the launch fails with an assert error).
//
// Asserts are on by default: one is written to be checked, and it costs a compare per element
// only in the kernels that contain one. KDSL_ASSERT=0 compiles them out of kernels traced
// from then on (the check and its inputs are dropped when nothing else uses them).
template <int... D>
void device_assert(const Block<boolean, D...> &cond, std::string_view message) {
  detail::emit_effect(OpKind::DeviceAssert, std::vector<int32_t>{cond.id()}, {}, std::string(message));
}

}  // namespace kdsl
