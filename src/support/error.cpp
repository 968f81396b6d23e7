// error.cpp - internal_error: the one way kdsl reports a bug in itself (kdsl::Error is header-only)
#include <kdsl/error.h>

#include <stdexcept>

namespace kdsl {

void internal_error(const std::string &what) {
  throw std::logic_error("kdsl internal error (a bug in kdsl, please report it): " + what);
}

}  // namespace kdsl
