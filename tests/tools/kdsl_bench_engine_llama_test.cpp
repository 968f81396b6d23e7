// kdsl_bench_engine_llama_test.cpp - kdsl-bench-engine --llama-bench: llama-bench's JSON read back, its command, its failures by name, the side-by-side table
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include <kdsl/error.h>

#include "src/tools/llama_bench_reference.h"
#include "tests/test_util.h"
#include "tests/tools/tool_process.h"

using kdsl::test::run_tool_process;
using kdsl::test::ToolRun;
using kdsl::tools::LlamaBenchFigures;
using kdsl::tools::parse_llama_bench_json;
using kdsl::tools::run_llama_bench;

namespace {

// The shape of llama-bench's -o json report (fields trimmed to those read, plus a few others).
const char *kReport = R"([
  {"model_filename": "m.gguf", "n_threads": 2, "n_prompt": 64, "n_gen": 0, "avg_ts": 600.5, "stddev_ts": 10.0, "samples_ts": [590.0, 678.9, 532.6]},
  {"model_filename": "m.gguf", "n_threads": 2, "n_prompt": 0, "n_gen": 8, "avg_ts": 123.45, "stddev_ts": 1.0},
  {"model_filename": "m.gguf", "n_threads": 2, "n_prompt": 64, "n_gen": 8, "avg_ts": 99999.0}
])";

// A stand-in llama-bench: a shell script that records its arguments, prints `stderr_text` on
// stderr, `stdout_text` on stdout and exits with `status`.
std::string fake_llama_bench(const std::string &name, const std::string &stdout_text, const std::string &stderr_text = "", int status = 0) {
  std::string path = kdsl::test::scratch_path(name), report = kdsl::test::scratch_path(name + ".txt");
  {
    std::ofstream f(report);
    f << stdout_text;
  }
  std::ofstream f(path);
  f << "#!/bin/sh\necho \"$@\" > '" << path << ".args'\necho '" << stderr_text << "' >&2\ncat '" << report << "'\nexit " << status << "\n";
  f.close();
  ::chmod(path.c_str(), 0755);
  return path;
}

}  // namespace

TEST_CASE("llama-bench reference: its JSON report gives the best sample of the pp and tg tests, mixed tests left out") {
  LlamaBenchFigures f = parse_llama_bench_json(kReport, "report");
  CHECK(f.prompt_tps == doctest::Approx(678.9));  // the best of samples_ts, not avg_ts
  CHECK(f.decode_tps == doctest::Approx(123.45));  // avg_ts where no samples are listed
  CHECK(parse_llama_bench_json("[]", "report").decode_tps == 0);

  std::string e = kdsl_test::error_text([] { parse_llama_bench_json("llama_model_load: error loading model", "the output of X"); });
  CHECK(e.find("the output of X") != std::string::npos);
  CHECK(e.find("not JSON") != std::string::npos);
  CHECK(e.find("llama_model_load") != std::string::npos);
  e = kdsl_test::error_text([] { parse_llama_bench_json(R"({"n_prompt": 1})", "report"); });
  CHECK(e.find("expected a JSON array") != std::string::npos);
  e = kdsl_test::error_text([] { parse_llama_bench_json(R"([{"n_prompt": 64, "avg_ts": 1.0}])", "report"); });
  CHECK(e.find("n_gen") != std::string::npos);
  e = kdsl_test::error_text([] { parse_llama_bench_json(R"([{"n_prompt": 64, "n_gen": 0}])", "report"); });
  CHECK(e.find("avg_ts") != std::string::npos);
}

TEST_CASE("llama-bench reference: the command it runs, and a failing or silent llama-bench named with its stderr") {
  std::string fake = fake_llama_bench("llama-bench-ok", kReport);
  LlamaBenchFigures f = run_llama_bench(fake, "/models/m.gguf", 2, 0, "q8_0", 64, 8, 3);
  CHECK(f.prompt_tps == doctest::Approx(678.9));
  CHECK(f.decode_tps == doctest::Approx(123.45));
  CHECK(kdsl::test::read_whole(fake + ".args") == "-m /models/m.gguf -t 2 -ngl 0 -ctk q8_0 -ctv q8_0 -p 64 -n 8 -r 3 -o json\n");

  std::string failing = fake_llama_bench("llama-bench-fails", "", "error: failed to load model m.gguf", 3);
  std::string e = kdsl_test::error_text([&] { run_llama_bench(failing, "m.gguf", 1, 0, "f16", 64, 8, 2); });
  CHECK(e.find(failing) != std::string::npos);
  CHECK(e.find("exited with status 3") != std::string::npos);
  CHECK(e.find("failed to load model m.gguf") != std::string::npos);

  std::string pp_only = fake_llama_bench("llama-bench-pp-only", R"([{"n_prompt": 64, "n_gen": 0, "avg_ts": 5.0}])");
  e = kdsl_test::error_text([&] { run_llama_bench(pp_only, "m.gguf", 1, 0, "f16", 64, 8, 2); });
  CHECK(e.find("reported no generation test") != std::string::npos);

  e = kdsl_test::error_text([&] { run_llama_bench(kdsl::test::scratch_path("no-such-llama-bench"), "m.gguf", 1, 0, "f16", 64, 8, 2); });
  CHECK(e.find("no such file") != std::string::npos);
}

TEST_CASE("kdsl-bench-engine --llama-bench: llama-bench's figures beside kdsl's, with their ratio, per model") {
  std::string fake = fake_llama_bench("llama-bench-table", kReport);
  ToolRun r = run_tool_process(std::string(KDSL_TOOLS_DIR) + "/kdsl-bench-engine",
                               {"--quick", "--type", "f32", "--no-kernels", "--threads", "1", "--llama-bench", fake}, 300);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  CHECK(r.err.find("measuring synthetic tiny f32 with llama-bench") != std::string::npos);
  // The fake saw the quick run's shapes and the model file kdsl measured.
  std::string args = kdsl::test::read_whole(fake + ".args");
  CHECK(args.find("-t 1 -ngl 0 -ctk f16 -ctv f16 -p 64 -n 8 ") != std::string::npos);  // llama-bench's default cache type, as kdsl's
  CHECK(args.find("synth-tiny-f32.gguf") != std::string::npos);

  // | synthetic tiny f32 | kdsl decode | llama.cpp tg | ratio | kdsl prompt | llama.cpp pp | ratio |
  size_t table = r.out.find("against llama-bench");
  REQUIRE(table != std::string::npos);
  size_t row = r.out.find("| synthetic tiny f32", table);
  REQUIRE(row != std::string::npos);
  std::string line = r.out.substr(row, r.out.find('\n', row) - row);
  CAPTURE(line);
  std::vector<std::string> cells;
  std::stringstream s(line);
  for (std::string cell; std::getline(s, cell, '|');) {
    cell.erase(0, cell.find_first_not_of(' '));
    cell.erase(cell.find_last_not_of(' ') + 1);
    if (!cell.empty()) cells.push_back(cell);
  }
  REQUIRE(cells.size() == 7);
  CHECK(cells[2] == "123.45");
  CHECK(cells[5] == "678.90");
  const double kdsl_decode = std::stod(cells[1]), kdsl_prompt = std::stod(cells[4]);
  CHECK(kdsl_decode > 0);
  CHECK(std::stod(cells[3]) == doctest::Approx(kdsl_decode / 123.45).epsilon(0.01));
  CHECK(std::stod(cells[6]) == doctest::Approx(kdsl_prompt / 678.9).epsilon(0.01));
}
