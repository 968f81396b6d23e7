// kdsl_dump_test.cpp - KDSL_DUMP writes the stages of kernels the disk cache already holds (they are compiled again, not loaded)
#include <filesystem>

#include "tests/tools/tool_process.h"

namespace fs = std::filesystem;
using kdsl::test::run_tool_process;

TEST_CASE("tools: KDSL_DUMP compiles a cached kernel again so its stages are written") {
  const std::string cache = kdsl::test::scratch_path("dump_test_cache"), dump = kdsl::test::scratch_path("dump_test_stages");
  fs::remove_all(cache), fs::remove_all(dump);
  const std::vector<std::string> args = {"-m", kdsl::test::tiny_model_file(), "-p", "a", "-n", "1", "--temp", "0", "--threads", "1"};
  // First run: every kernel compiled and stored. Second run, dumping: all of them on disk already.
  auto first = run_tool_process(kdsl::test::kdsl_run_path, args, 120, {"KDSL_CACHE_DIR=" + cache});
  CAPTURE(first.err);
  REQUIRE(first.status == 0);
  auto second = run_tool_process(kdsl::test::kdsl_run_path, args, 120,
                                 {"KDSL_CACHE_DIR=" + cache, "KDSL_DUMP=ir", "KDSL_DUMP_DIR=" + dump, "KDSL_LOG=info"});
  CAPTURE(second.err);
  REQUIRE(second.status == 0);
  CHECK(second.err.find("]: disk cache hit") == std::string::npos);  // the log line, not the summary's count
  int traced = 0;
  for (const auto &entry : fs::directory_iterator(dump)) traced += entry.path().string().ends_with(".traced.kir");
  CHECK(traced > 0);
  CHECK(second.out == first.out);  // the same text
}
