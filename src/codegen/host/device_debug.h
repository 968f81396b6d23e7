// device_debug.h - the run-time side of device_print and device_assert on the CPU: what JIT code calls, and how a launch collects a failed assert
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace kdsl::codegen {

// The symbols kernel objects call; the JIT resolves them to the functions below.
inline constexpr const char *kDevicePrintSymbol = "kdsl_device_print";
inline constexpr const char *kDeviceAssertSymbol = "kdsl_device_assert_failed";

// One printed operand, as the lowering lays it out: 7 i64 words per operand.
//   [0] DType of the block, [1] rank, [2..5] extents, [6] address of numel() 8-byte values in
//   row-major order: floats as double bits, integers and masks as i64 (unsigned zero-extended).
inline constexpr int kPrintOperandWords = 7;

// Writes one line "pid (x, y, z) label: values..." to stdout under a lock, then flushes, so
// lines of programs running at once never interleave.
void device_print_line(const char *label, const int32_t *pid, int32_t count, const int64_t *operands);

// Records that a program of the launch whose argument slots are at `launch` failed the
// device_assert `message` at element `index` (rank coordinates). Keeps the lowest program.
void device_assert_failed(const uint64_t *launch, const char *message, const int32_t *pid, const int64_t *index, int32_t rank);

// After a launch: the message naming `kernel`, the program, the assert's message and the
// failing element when a program of the launch at `launch` failed an assert, and forgets it.
std::optional<std::string> take_device_assert_failure(const uint64_t *launch, const std::string &kernel);

}  // namespace kdsl::codegen
