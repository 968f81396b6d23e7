// aot_test_util.h - what the ahead-of-time suites share: the test kernel libraries, kdsl-compile, a private cache folder per case
#pragma once
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "tests/models/shared_models.h"
#include "tests/scratch_cache.h"

namespace kdsl::aot_test {

// Where this build put a file, or $<variable> where set (a bundle's binaries run far from where
// they were built, as the fake-driver suite's do).
inline std::string built_file(const char *variable, const std::string &built) {
  const char *v = std::getenv(variable);
  return v && *v ? v : built;
}

// Built by tests/CMakeLists.txt from tests/aot/libraries/.
inline const std::string user_kernels_library = built_file("KDSL_TEST_USER_KERNELS", KDSL_TEST_USER_KERNELS);
inline const std::string duplicate_kernels_library = built_file("KDSL_TEST_DUPLICATE_KERNELS", KDSL_TEST_DUPLICATE_KERNELS);
inline const std::string kdsl_compile_path = built_file("KDSL_TEST_TOOLS_DIR", KDSL_TOOLS_DIR) + "/kdsl-compile";
inline const std::string fake_libcuda = built_file("KDSL_TEST_FAKE_LIBCUDA", KDSL_FAKE_LIBCUDA);

using test::ScratchCache;

}  // namespace kdsl::aot_test
