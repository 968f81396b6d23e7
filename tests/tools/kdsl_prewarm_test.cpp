// kdsl_prewarm_test.cpp - kdsl-prewarm fills a fresh cache so that kdsl-run compiles nothing: host (f16, Q4_0; plain, n-gram, self-draft) and sm_90a under the fake driver; the plan for gfx90a/gfx942 compiles
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "codegen/amdgpu/rocm_tools.h"
#include "codegen/nvptx/ptxas.h"
#include "jit_cache/cache_folder.h"
#include "jit_cache/disk_cache.h"
#include "models/synth/synth_model.h"
#include "tests/tools/tool_process.h"

using kdsl::test::run_tool_process;
using kdsl::test::ToolRun;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kPrewarm = std::string(KDSL_TOOLS_DIR) + "/kdsl-prewarm";

// Prewarm and kdsl-run take the same engine options: prefill chunks of 8 rows, a context of 200
// (the decode attention splits past 128 positions on two threads).
const std::vector<std::string> kEngineOptions = {"-b", "8", "--ctx", "200"};
// About 20 tokens (the synthetic tokenizer is nearly byte-level): two full chunks and a part.
const std::string kPrompt = "Once upon a time there";

fs::path fresh_cache_dir(const std::string &name) {
  fs::path dir = kdsl::test::scratch_path(name);
  fs::remove_all(dir);
  return dir;
}

std::string synthetic(kdsl::models::GgmlType type, const std::string &name) {
  kdsl::models::SynthConfig c = kdsl::models::synth_preset("tiny");
  c.weight_type = c.embedding_type = type;
  std::string path = kdsl::test::scratch_path(name);
  kdsl::models::write_synthetic_model(c, path);
  return path;
}

json prewarm(const std::string &model, const fs::path &cache, std::vector<std::string> extra, const std::vector<std::string> &env = {}) {
  std::vector<std::string> args = {"-m", model, "--cache-dir", cache.string(), "-j", "2", "--json"};
  args.insert(args.end(), extra.begin(), extra.end());
  ToolRun r = run_tool_process(kPrewarm, args, 600, env);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  json j = json::parse(r.out);
  CHECK(j["failed"] == 0);
  CHECK(j["kernels"] == j["compiled"].get<int>() + j["already_cached"].get<int>());
  return j;
}

json run_summary(const std::string &model, const fs::path &cache, std::vector<std::string> extra, const std::vector<std::string> &env = {}) {
  std::vector<std::string> args = {"-m", model, "--cache-dir", cache.string(), "-p", kPrompt, "-n", "150", "--ignore-eos", "--temp", "0",
                                   "--output-format", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  ToolRun r = run_tool_process(kdsl::test::kdsl_run_path, args, 300, env);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  return json::parse(r.out)["summary"];
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST_CASE("kdsl-prewarm: after a prewarm for the host, kdsl-run compiles nothing (f16 and Q4_0; plain, n-gram, Q8_0 self-draft, draft model)") {
  const std::string f16 = synthetic(kdsl::models::GgmlType::F16, "prewarm_F16.gguf"), q4 = synthetic(kdsl::models::GgmlType::Q4_0, "prewarm_Q4_0.gguf");
  for (const std::string &model : {f16, q4}) {
    const std::string &other = model == f16 ? q4 : f16;
    fs::path cache = fresh_cache_dir(model == f16 ? "prewarm_cache_f16" : "prewarm_cache_q4_0");
    CAPTURE(model);
    // Each drafter's plan adds to the one before; the same cache takes them in turn. The draft
    // model is the other file (the same tokenizer, the other weight type).
    for (std::vector<std::string> drafting :
         {std::vector<std::string>{}, {"--spec-ngram"}, {"--draft-type", "q8_0"}, {"-md", other}}) {
      CAPTURE(drafting.empty() ? std::string("plain") : drafting[0]);
      json warm = prewarm(model, cache, with({"--target", "host"}, with(kEngineOptions, drafting)));
      // A random model's drafter is never sure of a token: it drafts whatever its confidence.
      std::vector<std::string> run_drafting = drafting;
      if (!drafting.empty() && drafting[0] != "--spec-ngram") run_drafting.insert(run_drafting.end(), {"--draft-p-min", "0"});
      CHECK(warm["kernels"].get<int>() > 10);
      // The n-gram checks' kernels are the prefill chunks' (8 rows at most): nothing new.
      if (drafting.empty() || drafting[0] == "--draft-type") CHECK(warm["compiled"].get<int>() > 0);
      json summary = run_summary(model, cache, with(kEngineOptions, run_drafting));
      CHECK(summary["kernels_compiled"] == 0);
      CHECK(summary["kernel_cache_disk_hits"].get<int>() > 0);
      CHECK(summary["generated_tokens"] == 150);
      if (!drafting.empty()) CHECK(summary["spec_checks"].get<int>() > 0);
      // A second prewarm finds everything: it compiles nothing.
      json again = prewarm(model, cache, with({"--target", "host"}, with(kEngineOptions, drafting)));
      CHECK(again["compiled"] == 0);
      CHECK(again["already_cached"] == warm["kernels"]);
    }
    fs::remove_all(cache);
  }
}

TEST_CASE("kdsl-prewarm: --target sm_90a writes cubins the Hopper GPU engine loads with no compile (fake driver)") {
  if (kdsl::codegen::nvptx::find_libdevice().empty() || kdsl::codegen::nvptx::find_ptxas().empty()) {
    MESSAGE("skipped: no CUDA toolkit with ptxas and libdevice under /usr/local/cuda");
    return;
  }
  const std::string model = kdsl::test::tiny_model_file();
  fs::path cache = fresh_cache_dir("prewarm_cache_sm90");
  const std::vector<std::string> options = {"-b", "4", "--ctx", "64"};
  json warm = prewarm(model, cache, with({"--target", "sm_90a"}, options));
  CHECK(warm["compiled"].get<int>() > 10);
  // Every entry is a cubin (an ELF image), not PTX left to the driver.
  int entries = 0;
  for (const auto &e : fs::recursive_directory_iterator(cache))
    if (e.path().extension() == ".kdslbin") ++entries;
  CHECK(entries == warm["compiled"]);
  const std::vector<std::string> fake = {std::string("KDSL_LIBCUDA=") + KDSL_FAKE_LIBCUDA};
  std::vector<std::string> args = {"-m", model, "--cache-dir", cache.string(), "--device", "cuda", "-p", "Once upon", "-n", "20", "--ignore-eos",
                                   "--temp", "0", "--output-format", "json"};
  args.insert(args.end(), options.begin(), options.end());
  ToolRun r = run_tool_process(kdsl::test::kdsl_run_path, args, 300, fake);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  json summary = json::parse(r.out)["summary"];
  CHECK(summary["kernels_compiled"] == 0);
  CHECK(summary["kernel_cache_disk_hits"].get<int>() > 0);
  fs::remove_all(cache);
}

TEST_CASE("kdsl-prewarm: --list prints the plan and compiles nothing; bad options are one-line errors") {
  const std::string model = kdsl::test::tiny_model_file();
  fs::path cache = fresh_cache_dir("prewarm_cache_list");
  ToolRun list = run_tool_process(kPrewarm, {"-m", model, "--cache-dir", cache.string(), "--target", "host,sm_80", "--ctx", "64", "--list"}, 120);
  CAPTURE(list.err);
  REQUIRE(list.status == 0);
  CHECK(list.out.find("host\tkdsl::kernels::rmsnorm<") != std::string::npos);
  CHECK(list.out.find("sm_80\tkdsl::kernels::matvec_wide<") != std::string::npos);  // a GPU's decode
  int entries = 0;
  if (fs::exists(cache))
    for (const auto &e : fs::recursive_directory_iterator(cache)) entries += e.path().extension() == ".kdslbin";
  CHECK(entries == 0);

  kdsl::test::expect_user_error(run_tool_process(kPrewarm, {"-m", model, "--target", "sm_99"}), "kdsl-prewarm", "unknown target 'sm_99'");
  kdsl::test::expect_user_error(run_tool_process(kPrewarm, {"-m", model, "--batch", "8,x"}), "kdsl-prewarm", "--batch");
  kdsl::test::expect_user_error(run_tool_process(kPrewarm, {"-m", model, "--spec-ngram", "--draft-type", "q8_0"}), "kdsl-prewarm", "choose one");
  kdsl::test::expect_user_error(run_tool_process(kPrewarm, {"-m", model, "--draft-type", "f16"}), "kdsl-prewarm", "--draft-type f16: expected one of q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl, f8_e4m3");
  kdsl::test::expect_user_error(run_tool_process(kPrewarm, {"-m", "/nonexistent/model.gguf"}), "kdsl-prewarm", "/nonexistent/model.gguf");
  kdsl::test::expect_user_error(run_tool_process(kPrewarm, {"--target", "host"}), "kdsl-prewarm", "--model");
  fs::remove_all(cache);
}

TEST_CASE("kdsl-prewarm: --target gfx90a,gfx942 compiles the engine's whole plan (f16, Q4_0) into code objects without spills or scratch") {
  if (kdsl::codegen::amdgpu::find_lld().empty() || kdsl::codegen::amdgpu::find_device_libs().empty()) {
    MESSAGE("skipped: ld.lld-19 or ROCm's device libraries not found (scripts/install-deps.sh installs lld-19 and rocm-device-libs)");
    return;
  }
  for (kdsl::models::GgmlType type : {kdsl::models::GgmlType::F16, kdsl::models::GgmlType::Q4_0}) {
    const std::string model = synthetic(type, "prewarm_amd.gguf");
    fs::path cache = fresh_cache_dir("prewarm_cache_amd");
    json warm = prewarm(model, cache, {"--target", "gfx90a,gfx942", "-b", "8", "--ctx", "64"});
    CHECK(warm["compiled"].get<int>() > 20);
    int entries = 0;
    for (const kdsl::jit_cache::EntryFileInfo &e : kdsl::jit_cache::list_entry_files(cache)) {
      kdsl::jit_cache::EntryReport report = kdsl::jit_cache::inspect_entry(e.path);
      CAPTURE(report.metadata.dump());
      CHECK(report.problem.empty());
      CHECK(report.metadata["format"] == "hsaco");
      CHECK(report.metadata["vgpr_spills"] == 0);
      CHECK(report.metadata["sgpr_spills"] == 0);
      CHECK(report.metadata["scratch_bytes"] == 0);
      ++entries;
    }
    CHECK(entries == warm["compiled"]);
    fs::remove_all(cache);
  }
}
