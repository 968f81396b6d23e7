// scratch_cache.h - $KDSL_CACHE_DIR pointed at an empty folder of one test case's own, restored after
#pragma once
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>

#include "tests/models/shared_models.h"

namespace kdsl::test {

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

}  // namespace kdsl::test
