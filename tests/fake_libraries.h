// fake_libraries.h - where the stand-in GPU libraries are: this build's, or a GPU bundle's copy named in the environment
#pragma once
#include <cstdlib>
#include <string>

namespace kdsl::test {

// `built` (this build's path, a compile definition) unless `variable` names another:
// tests/gpu/make-bundle.sh carries the fakes, and tests/gpu/run.sh points these variables at
// the unpacked copies, since the build folder does not travel.
inline std::string fake_library(const char *variable, const char *built) {
  const char *v = std::getenv(variable);
  return v && *v ? v : built;
}

}  // namespace kdsl::test
