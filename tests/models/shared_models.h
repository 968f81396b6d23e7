// shared_models.h - locating ../shared/models test data; tests skip with a message when it is absent
#pragma once
#include <doctest/doctest.h>

#include <filesystem>
#include <optional>
#include <string>

namespace kdsl::test {

// The path of a file in the shared models folder, or nullopt (after saying why) when the
// folder is not laid out beside the checkout.
inline std::optional<std::string> shared_model(const std::string &name) {
  std::string path = std::string(KDSL_SHARED_MODELS_DIR) + "/" + name;
  if (std::filesystem::exists(path)) return path;
  MESSAGE("skipped: " << path << " is absent (lay out ../shared/models beside the checkout to run this test)");
  return std::nullopt;
}

// A fresh scratch path under the build folder for files a test writes.
inline std::string scratch_path(const std::string &name) {
  std::filesystem::path dir = std::filesystem::path(KDSL_TEST_BINARY_DIR) / "test-scratch";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

}  // namespace kdsl::test
