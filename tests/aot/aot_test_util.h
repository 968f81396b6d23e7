// aot_test_util.h - what the ahead-of-time suites share: the test kernel libraries, kdsl-compile, a private cache folder per case
#pragma once
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "tests/models/shared_models.h"

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

// $KDSL_CACHE_DIR set to an empty folder of its own for one test case, restored after.
struct ScratchCache {
  std::filesystem::path dir;
  std::optional<std::string> saved;
  explicit ScratchCache(const std::string &name) : dir(test::scratch_path(name)) {
    std::filesystem::remove_all(dir);
    if (const char *v = std::getenv("KDSL_CACHE_DIR")) saved = v;
    ::setenv("KDSL_CACHE_DIR", dir.c_str(), 1);
  }
  ~ScratchCache() {
    if (saved) ::setenv("KDSL_CACHE_DIR", saved->c_str(), 1);
    else ::unsetenv("KDSL_CACHE_DIR");
    std::filesystem::remove_all(dir);
  }
  // The entry files in the folder.
  int entries() const {
    int n = 0;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec); !ec && it != std::filesystem::recursive_directory_iterator(); ++it)
      n += it->path().extension() == ".kdslbin";
    return n;
  }
};

}  // namespace kdsl::aot_test
