// kdsl_perplexity_test.cpp - kdsl-perplexity end to end: a perplexity, a saved base, a KL divergence report, refusals by name
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/tools/tool_process.h"

using kdsl::test::run_tool_process;
using kdsl::test::ToolRun;
using nlohmann::json;

namespace {

const std::string kPerplexity = std::string(KDSL_TOOLS_DIR) + "/kdsl-perplexity";

std::string text_file() {
  std::string path = kdsl::test::scratch_path("ppl_text.txt");
  std::ofstream f(path);
  for (int i = 0; i < 40; ++i) f << "the quick brown fox jumps over the lazy dog number " << i << ". ";
  return path;
}

json run_json(std::vector<std::string> args) {
  args.push_back("--json");
  ToolRun r = run_tool_process(kPerplexity, args);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  return json::parse(r.out);
}

}  // namespace

TEST_CASE("kdsl-perplexity: perplexity, a saved base and the KL divergence of a quantized copy") {
  const std::string &model = kdsl::test::tiny_model_file();
  kdsl::models::SynthConfig c = kdsl::models::synth_preset("tiny");
  c.weight_type = kdsl::models::GgmlType::Q4_0;
  std::string quantized = kdsl::test::scratch_path("ppl_tool_q4_0.gguf");
  kdsl::models::write_synthetic_model(c, quantized);
  std::string text = text_file(), saved = kdsl::test::scratch_path("ppl_tool_base.logp");

  json base = run_json({"-m", model, "-f", text, "-c", "32", "--kl-divergence-base", saved});
  CHECK(base["chunks"].get<int>() >= 2);
  CHECK(base["scored"].get<int>() == base["chunks"].get<int>() * 15);
  double ppl = base["ppl"].get<double>();
  CHECK(ppl > 1.0);
  CHECK(ppl < 512.0 * 4);  // a random model is near-uniform over 512 tokens, not wildly worse

  json same = run_json({"-m", model, "-f", text, "-c", "32", "--kl-divergence-base", saved, "--kl-divergence"});
  CHECK(same["kld_max"].get<double>() < 1e-6);  // saved as f32
  CHECK(same["top1_agreement"].get<double>() == 1.0);
  CHECK(same["ppl"].get<double>() == doctest::Approx(ppl).epsilon(1e-9));

  json q = run_json({"-m", quantized, "-f", text, "-c", "32", "--kl-divergence-base", saved, "--kl-divergence"});
  CHECK(q["kld_mean"].get<double>() > 0);
  CHECK(q["kld_median"].get<double>() <= q["kld_p99"].get<double>());
  CHECK(q["base_ppl"].get<double>() == doctest::Approx(ppl).epsilon(1e-6));

  // The same model requantized in memory: a divergence above 0, smaller for Q8_0 than Q4_0.
  json r8 = run_json({"-m", model, "-f", text, "-c", "32", "--kl-divergence-base", saved, "--kl-divergence", "--requantize", "q8_0"});
  json r4 = run_json({"-m", model, "-f", text, "-c", "32", "--kl-divergence-base", saved, "--kl-divergence", "--requantize", "q4_0"});
  CHECK(r8["kld_mean"].get<double>() > 0);
  CHECK(r8["kld_mean"].get<double>() < r4["kld_mean"].get<double>());
  ToolRun bad_type = run_tool_process(kPerplexity, {"-m", model, "-f", text, "--requantize", "q6_k"});
  CHECK(bad_type.status == 1);
  CHECK(bad_type.err.find("--requantize q6_k: expected one of") != std::string::npos);

  ToolRun text_run = run_tool_process(kPerplexity, {"-m", model, "-f", text, "-c", "32", "--chunks", "1"});
  CHECK(text_run.status == 0);
  CHECK(text_run.out.find("Final estimate: PPL = ") != std::string::npos);

  ToolRun missing = run_tool_process(kPerplexity, {"-m", model, "-f", text, "--kl-divergence"});
  CHECK(missing.status == 1);
  CHECK(missing.err.find("--kl-divergence-base FILE") != std::string::npos);
  ToolRun short_text = run_tool_process(kPerplexity, {"-m", model, "-f", text, "-c", "2048"});
  CHECK(short_text.status == 1);
  CHECK(short_text.err.find("fewer than one chunk of 2048") != std::string::npos);
}
