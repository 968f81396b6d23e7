// kdsl_run_summary_test.cpp - the summary's bandwidth ceiling is measured once per device and recorded, not on every run
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "models/synth/synth_model.h"
#include "runtime/bandwidth_record.h"
#include "tests/test_util.h"
#include "tests/tools/tool_process.h"

using namespace kdsl::models;
using kdsl::test::run_tool_process;
using nlohmann::json;

TEST_CASE("kdsl-run: the bandwidth ceiling is recorded in the cache directory and read back") {
  std::string model = kdsl::test::scratch_path("summary_tiny.gguf");
  write_synthetic_model(synth_preset("tiny"), model);
  std::filesystem::path cache = kdsl::test::scratch_path("summary_cache");
  std::filesystem::remove_all(cache);
  auto summary = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"-m", model, "-p", "x", "-n", "2", "--output-format", "json", "--cache-dir", cache.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = run_tool_process(std::string(KDSL_TOOLS_DIR) + "/kdsl-run", args);
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    return json::parse(r.out)["summary"];
  };
  json first = summary({});
  CHECK(std::string(first["bandwidth_measured_by"]).find("measured now") != std::string::npos);
  REQUIRE(std::filesystem::is_directory(cache / "bandwidth"));
  json second = summary({});
  CHECK(std::string(second["bandwidth_measured_by"]).find("recorded") != std::string::npos);
  CHECK(second["measured_bandwidth_gb_per_s"] == first["measured_bandwidth_gb_per_s"]);
  CHECK(std::string(summary({"--bandwidth"})["bandwidth_measured_by"]).find("measured now") != std::string::npos);
}

TEST_CASE("runtime: a bandwidth record that is corrupt, for another device or from another way of measuring is measured anew") {
  std::filesystem::path dir = kdsl::test::scratch_path("bandwidth_records");
  std::filesystem::remove_all(dir);
  const kdsl::Device &cpu = kdsl_test::cpu();
  kdsl::runtime::MeasuredBandwidth a = kdsl::runtime::recorded_device_bandwidth(cpu, dir);
  CHECK(a.gbs > 0);
  CHECK(kdsl::runtime::recorded_device_bandwidth(cpu, dir).gbs == a.gbs);
  // This device's record as an earlier kdsl wrote it (no method: the read stream whose AVX2
  // code read low), and one of a later method.
  const std::string device = nlohmann::json(cpu.name()).dump();
  const std::string earlier = "{\"device\": " + device + ", \"gbs\": 12.5, \"what\": \"read stream\", \"date\": \"2026-12-05\"}";
  const std::string later = "{\"device\": " + device + ", \"gbs\": 12.5, \"what\": \"read stream\", \"date\": \"2026-12-05\", \"method\": 99}";
  for (const std::string &record :
       {std::string("{\"device\": \"another\", \"gbs\": 1e9}"), std::string("{\"device\": 5, \"gbs\": \"x\"}"), std::string("[1, 2]"), std::string("not json"),
        std::string(), earlier, later}) {
    CAPTURE(record);
    for (const auto &entry : std::filesystem::directory_iterator(dir / "bandwidth")) std::ofstream(entry.path()) << record;
    kdsl::runtime::MeasuredBandwidth b = kdsl::runtime::recorded_device_bandwidth(cpu, dir);
    CHECK(b.what.find("measured now") != std::string::npos);
    CHECK(b.gbs < 1e6);
  }
}

TEST_CASE("kdsl-run: on a cold cache with autotuning, first-use time is wall time, within each phase, and the rates stay finite") {
  std::string model = kdsl::test::scratch_path("summary_cold_tiny.gguf");
  write_synthetic_model(synth_preset("tiny"), model);
  std::filesystem::path cache = kdsl::test::scratch_path("summary_cold_cache");
  std::filesystem::remove_all(cache);
  // A prompt of several tokens takes the few-row products, whose candidates the autotuner
  // compiles in parallel: their compile times summed over threads exceeded the prefill's wall
  // time, and the rates came out as millions of tokens/s.
  auto r = run_tool_process(std::string(KDSL_TOOLS_DIR) + "/kdsl-run",
                            {"-m", model, "-p", "Once upon a time there", "-n", "4", "--ignore-eos", "--temp", "0", "--output-format", "json",
                             "--cache-dir", cache.string(), "--threads", "2"},
                            300, {"KDSL_AUTOTUNE=1"});
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  json s = json::parse(r.out)["summary"];
  CAPTURE(s.dump());
  CHECK(s["kernels_compiled"].get<int>() > 0);
  CHECK(s["prompt_compile_ms"].get<double>() > 0);
  CHECK(s["prompt_compile_ms"].get<double>() <= s["prompt_ms"].get<double>());
  CHECK(s["generation_compile_ms"].get<double>() <= s["generation_ms"].get<double>());
  // The tiny model prefills in well under a millisecond a token once compiled; a rate above
  // 10^6 tokens/s is what a negative remainder clamped to 1 us gives.
  CHECK(s["prompt_tokens_per_s"].get<double>() < 1e6);
  std::filesystem::remove_all(cache);
}
