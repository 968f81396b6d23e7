// fake_libraries.h - where the stand-in GPU libraries are: this build's, or a GPU bundle's copy named in the environment
#pragma once
#include <dlfcn.h>
#include <doctest/doctest.h>

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

// The fake's test hook `name` from the library opened as `handle`, typed F; a missing one fails
// the test, naming `source` (the fake's source file), rather than crashing on a null call.
template <class F>
F fake_symbol(void *handle, const char *source, const char *name) {
  void *p = dlsym(handle, name);
  REQUIRE_MESSAGE(p, source, " lacks ", name);
  return reinterpret_cast<F>(p);
}

}  // namespace kdsl::test
