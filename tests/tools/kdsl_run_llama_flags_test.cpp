// kdsl_run_llama_flags_test.cpp - kdsl-run takes llama.cpp's spellings of its options, does the cheap llama.cpp
// features (reverse prompt, -n -1, escapes, penalties, --no-mmap), and refuses the rest by name
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/synth/synth_model.h"
#include "src/tools/kv_cache_type.h"
#include "src/tools/llama_cpp_flags.h"
#include "tests/tools/tool_process.h"

using namespace kdsl::models;
using kdsl::test::run_tool_process;
using kdsl::test::ToolRun;
using nlohmann::json;

namespace {

const std::string &kRun = kdsl::test::kdsl_run_path;

const std::string &tiny_model() { return kdsl::test::tiny_model_file(); }

// A greedy JSON run of the tiny model with `extra` options.
json run_json(std::vector<std::string> extra) {
  std::vector<std::string> args = {"-m", tiny_model(), "--temp", "0"};
  args.insert(args.end(), extra.begin(), extra.end());
  return kdsl::test::kdsl_run_json(args);
}

void check_refused(const ToolRun &r, const std::string &part) { kdsl::test::expect_user_error(r, "kdsl-run", part); }

}  // namespace

TEST_CASE("kdsl-run: llama.cpp's short spellings mean what the long ones do") {
  json long_form = run_json({"-p", "Once upon", "--n-predict", "6", "--threads", "1", "--ctx", "64", "--seed", "5", "--batch-size", "4"});
  json short_form = run_json({"-p", "Once upon", "-n", "6", "-t", "1", "-c", "64", "-s", "5", "-b", "4", "-fa", "on"});
  CHECK(long_form["generated_ids"] == short_form["generated_ids"]);
  CHECK(run_json({"-p", "Once upon", "-n", "6", "--ctx-size", "64", "--no-mmap", "--mlock", "--log-disable"})["generated_ids"] ==
        long_form["generated_ids"]);
  CHECK(run_json({"-p", "Once upon", "-n", "6", "--ctx-size", "64", "-nr"})["generated_ids"] == long_form["generated_ids"]);
}

TEST_CASE("kdsl-run: -n -1 runs to the end of the context; --ignore-eos and the penalties are taken") {
  json j = run_json({"-p", "Once", "-n", "-1", "-c", "24", "--ignore-eos", "--repeat-last-n", "8", "--presence-penalty", "0.5",
                     "--frequency-penalty", "0.25"});
  CHECK(j["summary"]["stop_reason"] == "context");
  // 24 positions are fed; the last token is sampled from the logits of position 23 and never fed.
  CHECK(j["prompt_ids"].size() + j["generated_ids"].size() == 25);
  check_refused(run_tool_process(kRun, {"-m", tiny_model(), "-p", "x", "-n", "-2"}), "-n");
}

TEST_CASE("kdsl-run: a reverse prompt stops generation once the text ends with it") {
  std::string three = run_json({"-p", "Once upon", "-n", "3"})["text"];
  REQUIRE_FALSE(three.empty());
  json j = run_json({"-p", "Once upon", "-n", "20", "-r", three});
  CHECK(j["summary"]["stop_reason"] == "stop");
  CHECK(j["text"] == three);
}

TEST_CASE("kdsl-run: prompts take llama.cpp's escapes unless --no-escape, and --no-display-prompt hides the prompt") {
  CHECK(run_json({"-p", "a\\nb\\t\\x41", "-n", "1"})["prompt"] == "a\nb\tA");
  CHECK(run_json({"-p", "a\\nb", "-n", "1", "--no-escape"})["prompt"] == "a\\nb");
  ToolRun shown = run_tool_process(kRun, {"-m", tiny_model(), "-p", "Once upon", "-n", "2", "--temp", "0"});
  ToolRun hidden = run_tool_process(kRun, {"-m", tiny_model(), "-p", "Once upon", "-n", "2", "--temp", "0", "--no-display-prompt"});
  REQUIRE(shown.status == 0);
  REQUIRE(hidden.status == 0);
  CHECK(shown.out.rfind("Once upon", 0) == 0);
  CHECK(shown.out == "Once upon" + hidden.out);
  CHECK(kdsl::tools::process_escapes("\\\\ \\' \\\" \\q \\x4") == "\\ ' \" \\q \\x4");
}

TEST_CASE("kdsl-run: llama.cpp options it does not support are refused by name, with what to do instead") {
  check_refused(run_tool_process(kRun, {"-m", tiny_model(), "-p", "x", "-ngl", "99"}), "-ngl is a llama.cpp option kdsl-run does not support: "
                                                                                     "kdsl runs the whole model on one device; --device chooses it");
  check_refused(run_tool_process(kRun, {"-m", tiny_model(), "-i"}), "-i is a llama.cpp option");
  check_refused(run_tool_process(kRun, {"-m", tiny_model(), "-p", "x", "--mirostat", "2"}), "--mirostat");
  check_refused(run_tool_process(kRun, {"-m", tiny_model(), "-p", "x", "-ctk", "q4_0"}), "--cache-type-k q4_0: expected f32, f16, bf16 or q8_0");
  // q8_0 is taken, but its blocks of 32 do not fit the tiny model's heads of 16.
  check_refused(run_tool_process(kRun, {"-m", tiny_model(), "-p", "x", "-ctk", "q8_0"}),
                "--cache-type-k q8_0 --cache-type-v q8_0: the model's head_dim is 16; a q8_0 KV cache needs a multiple of 32");
  check_refused(run_tool_process(kRun, {"-m", tiny_model(), "-p", "x", "-ctk", "f16", "-ctv", "bf16"}),
                "--cache-type-k f16 --cache-type-v bf16: keys and values of the KV cache share one type");
  CHECK(kdsl::tools::kv_cache_types("f16", "").v == kdsl::kernels::WeightType::F16);  // one flag alone sets both
  CHECK(kdsl::tools::kv_cache_types("", "bf16").k == kdsl::kernels::WeightType::BF16);
  CHECK(kdsl::tools::kv_cache_types("q8_0", "").v == kdsl::kernels::WeightType::Q8_0);
  CHECK(kdsl::tools::kv_cache_types("", "").k == kdsl::kernels::WeightType::F32);
  check_refused(run_tool_process(kRun, {"-m", tiny_model(), "-p", "x", "-fa", "off"}), "always fused");
  check_refused(run_tool_process(kRun, {"-m", tiny_model(), "-p", "x", "-sys", "Be brief."}), "add --chat (-cnv)");
}
