// extent_requirements.h - expect_extent(x, n) as recorded while tracing: sizes from Scalar arguments, checked at launch
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"

namespace kdsl::detail {

// One expect_extent(x, n): argument `arg` must hold at least n elements, n an integer
// expression over the kernel's Scalar arguments and constants, kept as a small program.
struct ExtentRequirement {
  struct Node {
    enum class Kind : uint8_t { Argument, Constant, Unary, Binary } kind = Kind::Constant;
    OpKind op{};        // Unary, Binary
    int64_t value = 0;  // Argument: its index; Constant: the value
    int a = -1, b = -1; // operand nodes (earlier in the list)
  };
  int arg = 0;
  std::vector<Node> nodes;  // the last one is n
  std::string text;         // n as written: "argument 4 * argument 5"
};

// Builds each (pointer value, count value) pair the tracer recorded into a requirement; throws
// kdsl::Error naming the kernel when the pointer is not an argument or the count depends on
// anything but Scalar arguments, integer constants and integer arithmetic.
std::vector<ExtentRequirement> build_extent_requirements(const ir::Function &traced, const std::vector<std::pair<int32_t, int32_t>> &pairs);

// n for these launch arguments (the packed slots: integers sign-extended); throws kdsl::Error on
// a division by zero, naming the kernel.
int64_t evaluate(const ExtentRequirement &r, const uint64_t *slots, const std::string &kernel);

}  // namespace kdsl::detail
