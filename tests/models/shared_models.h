// shared_models.h - locating ../shared/models test data; tests skip with a message when it is absent
#pragma once
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>
#include <optional>
#include <string>

namespace kdsl::test {

// The path of a file in the shared models folder, or nullopt (after saying why) when the
// folder is not laid out beside the checkout.
// $KDSL_SHARED_MODELS_DIR, where set, stands in for the folder (a GPU machine gets the models
// in tests/gpu's bundle, not beside the checkout).
inline std::optional<std::string> shared_model(const std::string &name) {
  const char *dir = std::getenv("KDSL_SHARED_MODELS_DIR");
  std::string path = std::string(dir && *dir ? dir : KDSL_SHARED_MODELS_DIR) + "/" + name;
  if (std::filesystem::exists(path)) return path;
  MESSAGE("skipped: " << path << " is absent (lay out ../shared/models beside the checkout to run this test)");
  return std::nullopt;
}

// A fresh scratch path under the build folder ($KDSL_TEST_SCRATCH_DIR where set: a bundle's
// binaries run far from where they were built) for files a test writes.
inline std::string scratch_path(const std::string &name) {
  const char *scratch = std::getenv("KDSL_TEST_SCRATCH_DIR");
  std::filesystem::path dir = scratch && *scratch ? std::filesystem::path(scratch) : std::filesystem::path(KDSL_TEST_BINARY_DIR) / "test-scratch";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

inline std::vector<int> parse_ids(const std::string &line) {
  std::istringstream s(line);
  std::vector<int> ids;
  for (int id; s >> id;) ids.push_back(id);
  return ids;
}

// The PROMPT and NEXT ids the shared README gives for `prompt` (read from the README itself,
// so the expectation cannot drift from the reference).
inline std::pair<std::vector<int>, std::vector<int>> reference_ids(const std::string &readme, const std::string &prompt) {
  std::ifstream f(readme);
  std::string line;
  while (std::getline(f, line))
    if (line == prompt) {
      std::string p, n;
      std::getline(f, p);
      std::getline(f, n);
      REQUIRE(p.rfind("PROMPT: ", 0) == 0);
      REQUIRE(n.rfind("NEXT: ", 0) == 0);
      return {parse_ids(p.substr(8)), parse_ids(n.substr(6))};
    }
  FAIL("prompt '" << prompt << "' not found in " << readme);
  return {};
}

// The 64 greedy ids stories260K.bin gives from BOS, from the shared README.
inline std::vector<int> stories_reference(const std::string &readme) {
  std::ifstream f(readme);
  std::string line, ids_line;
  while (std::getline(f, line))
    if (line.rfind("`stories260K.bin`, starting from BOS", 0) == 0) {
      std::getline(f, line);  // blank
      std::getline(f, line);  // ```
      std::getline(f, ids_line);
    }
  return parse_ids(ids_line);
}

}  // namespace kdsl::test
