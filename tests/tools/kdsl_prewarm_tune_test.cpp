// kdsl_prewarm_tune_test.cpp - kdsl-prewarm --tune records winners that later processes reuse (a second prewarm and kdsl-run time nothing), kdsl-cache lists and clears them
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/tools/tool_process.h"

using kdsl::test::run_tool_process;
using kdsl::test::ToolRun;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kPrewarm = std::string(KDSL_TOOLS_DIR) + "/kdsl-prewarm";
const std::string kCacheTool = std::string(KDSL_TOOLS_DIR) + "/kdsl-cache";
// The suites run with tuning off (tests/main.cpp); these processes tune.
const std::vector<std::string> kTuning = {"KDSL_AUTOTUNE=1"};
const std::vector<std::string> kEngineOptions = {"-b", "8", "--ctx", "64", "-t", "2"};

json prewarm_tune(const std::string &model, const fs::path &cache) {
  std::vector<std::string> args = {"-m", model, "--cache-dir", cache.string(), "-j", "2", "--json", "--tune", "--target", "host"};
  args.insert(args.end(), kEngineOptions.begin(), kEngineOptions.end());
  ToolRun r = run_tool_process(kPrewarm, args, 600, kTuning);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  json j = json::parse(r.out);
  CHECK(j["failed"] == 0);
  REQUIRE(j.contains("tuning"));
  return j;
}

int tuning_records(const fs::path &cache) {
  int n = 0;
  if (fs::exists(cache / "tuning"))
    for (const auto &e : fs::directory_iterator(cache / "tuning")) n += e.path().extension() == ".json";
  return n;
}

}  // namespace

TEST_CASE("kdsl-prewarm --tune: winners recorded once; a second prewarm and kdsl-run time nothing and compile nothing") {
  const std::string model = kdsl::test::tiny_model_file();
  fs::path cache = kdsl::test::scratch_path("prewarm_tune_cache");
  fs::remove_all(cache);

  json first = prewarm_tune(model, cache);
  // Decode, a prompt's few rows and its prefill tiles: each tuned point's shapes timed once.
  CHECK(first["tuning"]["timed"].get<int>() > 0);
  CHECK(first["tuning"]["recorded"] == 0);
  CHECK(tuning_records(cache) == first["tuning"]["timed"]);

  // Another process finds every choice recorded: nothing timed, nothing compiled.
  json second = prewarm_tune(model, cache);
  CHECK(second["tuning"]["timed"] == 0);
  CHECK(second["tuning"]["recorded"] == first["tuning"]["timed"]);
  CHECK(second["compiled"] == 0);
  // Its plan holds the recorded winners only, fewer kernels than every candidate.
  CHECK(second["kernels"].get<int>() < first["kernels"].get<int>());

  std::vector<std::string> args = {"-m", model, "--cache-dir", cache.string(), "-p", "Once upon a time there was", "-n", "12", "--ignore-eos",
                                   "--temp", "0", "--output-format", "json"};
  args.insert(args.end(), kEngineOptions.begin(), kEngineOptions.end());
  ToolRun run = run_tool_process(kdsl::test::kdsl_run_path, args, 300, kTuning);
  CAPTURE(run.err);
  REQUIRE(run.status == 0);
  json summary = json::parse(run.out)["summary"];
  CHECK(summary["kernels_compiled"] == 0);
  CHECK(summary["autotune_timed"] == 0);
  CHECK(summary["autotune_recorded"].get<int>() > 0);

  // kdsl-cache shows the records, and clear-tuning removes them (the kernels stay).
  ToolRun list = run_tool_process(kCacheTool, {"list", "--cache-dir", cache.string()});
  CAPTURE(list.err);
  REQUIRE(list.status == 0);
  CHECK(list.out.find("tuned kernel") != std::string::npos);
  CHECK(list.out.find("matmul.decode<f32>") != std::string::npos);
  ToolRun verify = run_tool_process(kCacheTool, {"verify", "--cache-dir", cache.string()});
  CHECK(verify.status == 0);
  CHECK(verify.out.find(std::to_string(tuning_records(cache)) + " tuning records checked, 0 bad") != std::string::npos);
  ToolRun clear = run_tool_process(kCacheTool, {"clear-tuning", "--cache-dir", cache.string()});
  REQUIRE(clear.status == 0);
  CHECK(tuning_records(cache) == 0);
  CHECK(!fs::is_empty(cache));  // the kernels stay

  // Tuning off: --tune is refused, saying why.
  ToolRun off = run_tool_process(kPrewarm, {"-m", model, "--cache-dir", cache.string(), "--tune"}, 120, {"KDSL_AUTOTUNE=0"});
  CHECK(off.status != 0);
  CHECK(off.err.find("KDSL_AUTOTUNE=0") != std::string::npos);
  ToolRun gpu_only = run_tool_process(kPrewarm, {"-m", model, "--cache-dir", cache.string(), "--tune", "--target", "sm_90"}, 120, kTuning);
  CHECK(gpu_only.status != 0);
  CHECK(gpu_only.err.find("only host is tuned") != std::string::npos);
  fs::remove_all(cache);
}
