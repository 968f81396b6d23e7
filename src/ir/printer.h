// printer.h - the stable text form of a function; values renumbered in order, so equal IR prints equally
#pragma once
#include <string>

#include "ir/ir.h"

namespace kdsl::ir {

// Prints `fn` in the text form the parser reads back. Values are renumbered %0, %1, ... in
// order of definition, so the text (and the hash taken of it) does not depend on how the
// function was built.
std::string print(const Function &fn);

}  // namespace kdsl::ir
