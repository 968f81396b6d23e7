// verifier.h - checks a function's structure and types, with messages that name the op
#pragma once
#include <string>
#include <vector>

#include "ir/ir.h"

namespace kdsl::ir {

// Every problem found: values used before definition or outside their region, operand
// counts, operand and result types per op, region arguments and yields. Empty when valid.
std::vector<std::string> verify(const Function &fn);

// Throws (as a kdsl internal error) with every problem and the printed function.
void verify_or_throw(const Function &fn);

}  // namespace kdsl::ir
