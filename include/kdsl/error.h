// error.h - kdsl's two kinds of failure: user errors (kdsl::Error) and bugs in kdsl (internal_error)
#pragma once
#include <stdexcept>
#include <string>

namespace kdsl {

// A user error: bad shapes, wrong arguments, a corrupt file, a missing driver. The message
// names the kernel or file, the argument or field, what was expected and what was found.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A broken invariant inside kdsl itself; the message says so, so users report it.
[[noreturn]] void internal_error(const std::string &what);

}  // namespace kdsl
