// kdsl_run_spec_test.cpp - kdsl-run's speculative decoding: -md and --spec-ngram give plain decoding's text, the summary counts the drafts
#include <doctest/doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/synth/synth_model.h"
#include "tests/tools/tool_process.h"

using namespace kdsl::models;
using kdsl::test::run_tool_process;
using kdsl::test::ToolRun;
using nlohmann::json;

namespace {

const std::string kRun = std::string(KDSL_TOOLS_DIR) + "/kdsl-run";

std::string model(const std::string &name, SynthConfig c) {
  std::string p = kdsl::test::scratch_path(name);
  write_synthetic_model(c, p);
  return p;
}

json run_json(std::vector<std::string> args) {
  args.insert(args.end(), {"--temp", "0", "-n", "24", "--ignore-eos", "-c", "128"});
  return kdsl::test::kdsl_run_json(args);
}

void check_refused(const ToolRun &r, const std::string &part) { kdsl::test::expect_user_error(r, "kdsl-run", part); }

}  // namespace

TEST_CASE("kdsl-run: -md and --spec-ngram generate plain decoding's tokens and report the drafts") {
  SynthConfig c = synth_preset("tiny");
  std::string target = model("spec_run_tiny.gguf", c);
  c.weight_type = c.embedding_type = GgmlType::Q4_0;
  std::string draft = model("spec_run_tiny_q4_0.gguf", c);
  const std::string prompt = "one two three one two three one two";
  json plain = run_json({"-m", target, "-p", prompt});
  CHECK_FALSE(plain["summary"].contains("spec_drafted"));
  for (std::vector<std::string> spec : {std::vector<std::string>{"-md", draft, "--draft-p-min", "0"}, {"--model-draft", draft, "--draft-max", "4"},
                                        {"--spec-ngram"}, {"--spec-ngram", "--draft-max", "3", "--draft-min", "2"},
                                        {"--spec-ngram", "--draft-branches", "3"}, {"-md", draft, "--draft-p-min", "0", "--draft-branches", "3"},
                                        {"--draft-type", "q4_0", "--draft-p-min", "0"}, {"--draft-layers", "1", "--draft-type", "q8_0"},
                                        {"--draft-type", "q4_0", "--draft-branches", "2", "--draft-p-min", "0"}}) {
    CAPTURE(spec[0]);
    std::vector<std::string> args = {"-m", target, "-p", prompt};
    args.insert(args.end(), spec.begin(), spec.end());
    json j = run_json(args);
    CHECK(j["generated_ids"] == plain["generated_ids"]);
    const json &s = j["summary"];
    REQUIRE(s.contains("spec_drafted"));
    CHECK(s["spec_accepted"].get<int64_t>() <= s["spec_drafted"].get<int64_t>());
    const bool tree = std::find(spec.begin(), spec.end(), "--draft-branches") != spec.end();
    CHECK(s["spec_drafter"] == std::string(spec[0] != "--spec-ngram" ? "draft model" : "n-gram") + (tree ? " tree" : ""));
    // Its own weights, quantized, draft well; but a random model is never 75% sure of a token
    // (the default --draft-p-min), and then drafts nothing.
    if (spec[0] == "-md" || spec[0] == "--draft-type") CHECK(s["spec_accepted"].get<int64_t>() > 0);
    if (spec[0] == "--model-draft") {
      CHECK(s["spec_drafted"] == 0);
      // Asked, got nothing, and the asks cost a draft model's pass: speculation turns itself off.
      CHECK(s["spec_empty_drafts"].get<int64_t>() >= 1);
      CHECK(s["spec_plain_steps"].get<int64_t>() > s["spec_empty_drafts"].get<int64_t>());
    }
    CHECK(s.contains("spec_acceptance_rate"));
    CHECK(s.contains("spec_mean_accepted_length"));
  }
  ToolRun text = run_tool_process(kRun, {"-m", target, "-p", prompt, "--temp", "0", "-n", "8", "-md", draft, "--draft-p-min", "0"});
  REQUIRE(text.status == 0);
  CHECK(text.err.find("speculative     draft model: ") != std::string::npos);
  CHECK(text.err.find("mean accepted length") != std::string::npos);
  CHECK(text.err.find("steps asked for drafts and got none") != std::string::npos);
}

TEST_CASE("kdsl-run: speculative options that cannot work are refused in one line") {
  SynthConfig c = synth_preset("tiny");
  std::string target = model("spec_refuse_tiny.gguf", c);
  c.hparams.n_vocab = 600;
  std::string other_vocab = model("spec_refuse_600.gguf", c);
  check_refused(run_tool_process(kRun, {"-m", target, "-p", "x", "--spec-ngram", "-md", target}), "choose one");
  check_refused(run_tool_process(kRun, {"-m", target, "-p", "x", "--draft-max", "4"}), "add --spec-ngram, --model-draft FILE (-md) or --draft-type TYPE");
  check_refused(run_tool_process(kRun, {"-m", target, "-p", "x", "--draft-type", "q4_0", "-md", target}), "choose one");
  check_refused(run_tool_process(kRun, {"-m", target, "-p", "x", "--draft-type", "q5_k"}), "--draft-type q5_k: expected one of q4_0");
  check_refused(run_tool_process(kRun, {"-m", target, "-p", "x", "--spec-ngram", "--draft-max", "2", "--draft-min", "3"}),
                "--draft-min 3: expected at most --draft-max (2)");
  check_refused(run_tool_process(kRun, {"-m", target, "-p", "x", "-md", other_vocab}), "the draft model's vocabulary has 600 tokens but the target's has 512");
  check_refused(run_tool_process(kRun, {"-m", target, "-p", "x", "-md", "/nonexistent/draft.gguf"}), "/nonexistent/draft.gguf");
  check_refused(run_tool_process(kRun, {"-m", target, "-p", "x", "--draft-branches", "2"}), "--draft-branches drafts a token tree for speculative decoding, which is off");
}
