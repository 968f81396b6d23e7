// kdsl_imatrix_test.cpp - kdsl-imatrix writes an importance matrix of a calibration text that kdsl-quantize --imatrix uses; bad inputs are refused by name
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "models/gguf/gguf_file.h"
#include "models/gguf/importance_matrix.h"
#include "models/synth/synth_model.h"
#include "tests/tools/tool_process.h"

using namespace kdsl::models;
using kdsl::test::run_tool_process;
using kdsl::test::ToolRun;

namespace {

const std::string kImatrix = std::string(KDSL_TOOLS_DIR) + "/kdsl-imatrix";
const std::string kQuantize = std::string(KDSL_TEST_BINARY_DIR) + "/models/kdsl-quantize";

// A tiny f32 llama with 256-wide rows (whole k-quant super-blocks) and a calibration text.
std::string tiny_f32_model() {
  SynthConfig c = synth_preset("tiny");
  c.hparams.n_embd = c.hparams.n_ff = 256;
  std::string path = kdsl::test::scratch_path("imatrix-tool-model.gguf");
  write_synthetic_model(c, path);
  return path;
}

std::string calibration_text() {
  std::string path = kdsl::test::scratch_path("imatrix-calibration.txt");
  std::ofstream f(path);
  for (int i = 0; i < 40; ++i) f << "The river runs " << i << " miles to the sea, and the hills are green in spring. ";
  return path;
}

}  // namespace

TEST_CASE("kdsl-imatrix: a calibration text's importance matrix, used by kdsl-quantize --imatrix") {
  std::string model = tiny_f32_model(), text = calibration_text(), imatrix = kdsl::test::scratch_path("tool.imatrix.gguf");
  ToolRun r = run_tool_process(kImatrix, {"-m", model, "-f", text, "-o", imatrix, "-c", "32", "--chunks", "3", "-t", "1"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("kdsl-imatrix: wrote " + imatrix) != std::string::npos);
  CHECK(r.out.find("3 chunks of 32 tokens") != std::string::npos);
  ImportanceMatrix m = ImportanceMatrix::load(imatrix);
  CHECK(m.chunk_count == 3);
  CHECK(m.chunk_size == 32);
  CHECK(m.datasets == std::vector<std::string>{text});
  REQUIRE(m.find("blk.0.attn_q.weight"));
  CHECK(m.find("blk.0.attn_q.weight")->rows == 3 * 32);
  CHECK_FALSE(m.find("output.weight"));

  std::string out = kdsl::test::scratch_path("tool-imatrix-q4_k.gguf");
  r = run_tool_process(kQuantize, {"--imatrix", imatrix, model, out, "q4_k", "-q"});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  // Every requantized matrix but the classifier (which the matrix leaves out) is weighted.
  CHECK(r.out.find("with the importance matrix") != std::string::npos);
  GgufFile q(out);
  CHECK(q.get_string("quantize.imatrix.file") == imatrix);
  CHECK(q.get_int("quantize.imatrix.chunks_count") == 3);
  CHECK(q.get_int("quantize.imatrix.entries_count") == int64_t(m.entries.size()));

  r = run_tool_process(kQuantize, {"--imatrix", text, model, out, "q4_k"});  // a text file is no importance matrix
  CHECK(r.status == 1);
  CHECK(r.err.find(text) != std::string::npos);
  r = run_tool_process(kImatrix, {"-m", model, "-f", kdsl::test::scratch_path("no-such-text.txt"), "-o", imatrix});
  CHECK(r.status == 1);
  CHECK(r.err.find("no-such-text.txt: cannot open the text file") != std::string::npos);
  r = run_tool_process(kImatrix, {"-m", model, "-f", text, "-o", imatrix, "-c", "60000"});
  CHECK(r.status == 1);
  CHECK(r.err.find("fewer than one chunk of 60000") != std::string::npos);
}
