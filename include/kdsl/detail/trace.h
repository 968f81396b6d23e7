// trace.h - the narrow interface through which typed blocks record IR while a kernel is traced
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <kdsl/detail/op_kind.h>
#include <kdsl/dtype.h>

namespace kdsl::detail {

// The IR type of a block, described without the IR headers.
struct TypeDesc {
  DType elem = DType::F32;
  bool is_ptr = false;
  bool read_only = false;  // a pointer to const data: Ptr<const T>
  int rank = 0;
  std::array<int64_t, 4> dims{};
  bool no_specialize = false;  // a Dynamic<T> kernel parameter: never classed as 1 or divisible by 16
};

// Records one op in the innermost open region of the current trace and returns its result
// value. Throws kdsl::Error when no kernel is being traced.
int32_t emit(OpKind kind, std::initializer_list<int32_t> operands, const TypeDesc &result,
             std::initializer_list<int64_t> ints = {}, double fval = 0);
int32_t emit(OpKind kind, const std::vector<int32_t> &operands, const TypeDesc &result,
             const std::vector<int64_t> &ints, double fval = 0);
// An op with no result (store, yield).
void emit_effect(OpKind kind, std::initializer_list<int32_t> operands);
// An op with no result that carries a message (device_print's label, device_assert's
// message). A device_assert is dropped here when asserts are compiled out (KDSL_ASSERT=0).
void emit_effect(OpKind kind, const std::vector<int32_t> &operands, const std::vector<int64_t> &ints, std::string text);

// Records that kernel argument value `pointer` must hold at least `count` elements, count an
// integer scalar computed from arguments and constants (kdsl::expect_extent); the launch checks it.
void require_extent(int32_t pointer, int32_t count);

// Run-time loops: begin_for opens the body and returns its arguments (iv, carried...);
// end_for closes it with the values to carry and returns the loop's results.
std::vector<int32_t> begin_for(int32_t lo, int32_t hi, int32_t step, const std::vector<int32_t> &inits);
std::vector<int32_t> end_for(const std::vector<int32_t> &yields);

// Conditionals: begin_if opens the then-region, begin_else closes it with its yields and
// opens the else-region, end_if closes that and returns the results.
void begin_if(int32_t cond);
void begin_else(const std::vector<int32_t> &then_yields);
std::vector<int32_t> end_if(const std::vector<int32_t> &else_yields);

}  // namespace kdsl::detail
