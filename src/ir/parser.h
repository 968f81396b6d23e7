// parser.h - reads the text form that ir::print writes back into a Function
#pragma once
#include <string_view>

#include "ir/ir.h"

namespace kdsl::ir {

// Reads one kernel in the text form of ir::print (the grammar is at the top of parser.cpp),
// so that print(parse(print(f))) == print(f). Value names need not be numbers (`%mask` is
// fine) and `//` comments run to the end of a line, for hand-written IR. The result is
// checked by the verifier.
//
// Throws kdsl::Error on bad text: "line 3, column 12: expected a type such as f32[16],
// found 'foo'"; undefined values and unknown ops are named. IR that parses but does not
// verify is reported with the verifier's findings.
Function parse(std::string_view text);

// As parse, without the verifier: for tests that need IR the verifier rejects.
Function parse_unverified(std::string_view text);

}  // namespace kdsl::ir
