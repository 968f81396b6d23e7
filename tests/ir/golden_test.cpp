// golden_test.cpp - golden IR tests: each pass on each tests/ir/golden/<pass>/<case>.kir, output compared as text
//
// A case file holds the input IR, a line `// CHECK-OUTPUT:`, then the printed IR the pass must
// produce. With KDSL_UPDATE_GOLDEN=1 the expected part is rewritten instead of compared (see
// tests/ir/golden/README.md).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <kdsl/error.h>

#include "codegen/passes/cse.h"
#include "codegen/passes/dce.h"
#include "codegen/passes/fold_constants.h"
#include "codegen/passes/specialize_arguments.h"
#include "codegen/pipeline.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/verifier.h"

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kSeparator = "// CHECK-OUTPUT:";

using PassFunction = void (*)(kdsl::ir::Function &);

// Folder name -> what runs on the input. `pipeline` is the whole of codegen/pipeline.cpp.
const std::map<std::string, PassFunction> &passes_by_folder() {
  static const std::map<std::string, PassFunction> table = {
      {"specialize_arguments", kdsl::passes::specialize_arguments},
      {"fold_constants", kdsl::passes::fold_constants},
      {"cse", kdsl::passes::cse},
      {"dce", kdsl::passes::dce},
      {"pipeline", kdsl::codegen::run_pipeline},
  };
  return table;
}

fs::path golden_root() { return fs::path(KDSL_SOURCE_DIR) / "tests" / "ir" / "golden"; }

bool updating() {
  const char *v = std::getenv("KDSL_UPDATE_GOLDEN");
  return v && std::string_view(v) == "1";
}

std::string read_file(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct GoldenCase {
  std::string input;     // everything before the separator line, comments included
  std::string expected;  // everything after it
  bool has_expected = false;
};

GoldenCase split_case(const std::string &text) {
  GoldenCase c;
  size_t line = 0;
  while (line < text.size()) {
    size_t end = text.find('\n', line);
    size_t next = end == std::string::npos ? text.size() : end + 1;
    std::string_view content = std::string_view(text).substr(line, next - line);
    while (!content.empty() && (content.back() == '\n' || content.back() == '\r' || content.back() == ' ')) content.remove_suffix(1);
    if (content == kSeparator) {
      c.input = text.substr(0, line);
      c.expected = text.substr(next);
      c.has_expected = true;
      return c;
    }
    line = next;
  }
  c.input = text;
  return c;
}

std::vector<fs::path> cases_in(const fs::path &dir) {
  std::vector<fs::path> out;
  for (const auto &entry : fs::directory_iterator(dir))
    if (entry.is_regular_file() && entry.path().extension() == ".kir") out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

// Runs one pass folder; returns how many cases it checked.
int run_golden(const std::string &pass) {
  const fs::path dir = golden_root() / pass;
  REQUIRE_MESSAGE(fs::is_directory(dir), "no golden folder ", dir.string());
  PassFunction run = passes_by_folder().at(pass);
  int count = 0;
  for (const fs::path &path : cases_in(dir)) {
    ++count;
    INFO("golden case ", path.string());
    GoldenCase c = split_case(read_file(path));
    std::string actual;
    try {
      kdsl::ir::Function fn = kdsl::ir::parse(c.input);
      run(fn);
      std::vector<std::string> problems = kdsl::ir::verify(fn);
      CHECK_MESSAGE(problems.empty(), "the pass output does not verify: ", problems.empty() ? "" : problems[0]);
      actual = kdsl::ir::print(fn);
    } catch (const std::exception &e) {
      FAIL_CHECK("input does not parse or the pass threw: ", std::string(e.what()));
      continue;
    }
    if (updating()) {
      if (!c.has_expected || actual != c.expected) {
        std::string input = c.input;
        if (!input.empty() && input.back() != '\n') input += '\n';
        std::ofstream(path, std::ios::binary | std::ios::trunc) << input << kSeparator << '\n' << actual;
        MESSAGE("KDSL_UPDATE_GOLDEN=1: rewrote the expected output of ", path.string());
      }
      continue;
    }
    if (!c.has_expected) {
      FAIL_CHECK("no '", kSeparator, "' line: run with KDSL_UPDATE_GOLDEN=1 to write the expected output, then review it");
      continue;
    }
    INFO("if the change is intended, rerun with KDSL_UPDATE_GOLDEN=1 and review the diff");
    CHECK(actual == c.expected);
  }
  return count;
}

}  // namespace

TEST_CASE("golden IR: every folder names a pass, every pass has cases") {
  std::vector<std::string> folders;
  for (const auto &entry : fs::directory_iterator(golden_root()))
    if (entry.is_directory()) folders.push_back(entry.path().filename().string());
  for (const std::string &f : folders) CHECK_MESSAGE(passes_by_folder().count(f) == 1, "tests/ir/golden/", f, " is not a known pass");
  for (const auto &[name, run] : passes_by_folder()) {
    INFO("pass ", name);
    CHECK(std::find(folders.begin(), folders.end(), name) != folders.end());
    if (fs::is_directory(golden_root() / name)) CHECK(!cases_in(golden_root() / name).empty());
  }
}

TEST_CASE("golden IR: the case file format") {
  GoldenCase c = split_case("// about\nkernel @k() {\n}\n// CHECK-OUTPUT:\nkernel @k() {\n}\n");
  CHECK(c.has_expected);
  CHECK(c.input == "// about\nkernel @k() {\n}\n");
  CHECK(c.expected == "kernel @k() {\n}\n");
  CHECK_FALSE(split_case("kernel @k() {\n}\n").has_expected);
  // The separator must be a line of its own.
  CHECK_FALSE(split_case("kernel @k() {  // CHECK-OUTPUT:\n}\n").has_expected);
}

TEST_CASE("golden IR: specialize_arguments") { CHECK(run_golden("specialize_arguments") > 0); }
TEST_CASE("golden IR: fold_constants") { CHECK(run_golden("fold_constants") > 0); }
TEST_CASE("golden IR: cse") { CHECK(run_golden("cse") > 0); }
TEST_CASE("golden IR: dce") { CHECK(run_golden("dce") > 0); }
TEST_CASE("golden IR: pipeline") { CHECK(run_golden("pipeline") > 0); }
