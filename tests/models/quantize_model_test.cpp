// quantize_model_test.cpp - kdsl-quantize's library: llama.cpp's per-tensor rules, files whose data is quantize_row of the input, read back by kdsl and by the gguf Python package
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <kdsl/error.h>
#include <map>
#include <sstream>

#include "models/arch/hparams.h"
#include "models/gguf/dequantize.h"
#include "models/gguf/gguf_writer.h"
#include "models/gguf/quantize.h"
#include "models/gguf/quantize_model.h"
#include "models/sampler/rng.h"
#include "models/synth/synth_model.h"
#include "tests/models/shared_models.h"

using namespace kdsl::models;

namespace {

QuantizeTarget target(const std::string &name) {
  auto t = parse_quantize_target(name);
  REQUIRE_MESSAGE(t, name << " is not a quantize target");
  return *t;
}

// A tiny f32 llama whose rows are whole 256-element super-blocks, 8 layers (so the _M mixes'
// first and last eighths are one layer each).
std::string f32_model(const std::string &file) {
  SynthConfig c = synth_preset("tiny");
  c.hparams.n_embd = c.hparams.n_ff = 256;
  c.hparams.n_layer = 8;
  std::string path = kdsl::test::scratch_path(file);
  if (!std::filesystem::exists(path)) write_synthetic_model(c, path);
  return path;
}

// Runs `command`, returning its exit status and its output (stdout and stderr).
int run(const std::string &command, std::string *output) {
  std::FILE *p = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buffer[4096];
  output->clear();
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, p)) > 0;) output->append(buffer, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("quantize model: targets are the readable types and llama.cpp's mixes, with their file types") {
  CHECK(target("q8_0").base == GgmlType::Q8_0);
  CHECK(target("Q8_0").llama_ftype == 7);
  CHECK(target("q5_1").llama_ftype == 9);
  CHECK(target("Q4_K_M").base == GgmlType::Q4_K);
  CHECK(target("q4_k_m").llama_ftype == 15);
  CHECK(target("Q5_K_M").llama_ftype == 17);
  CHECK(target("Q5_K_M").medium_mix);
  CHECK(target("bf16").llama_ftype == 32);
  CHECK_FALSE(parse_quantize_target("q8_1"));  // known by id, no layout
  CHECK(target("f8_e4m3").base == GgmlType::F8_E4M3);  // kdsl's own: no llama.cpp file type
  CHECK_FALSE(target("F8_E4M3").llama_ftype);
  CHECK(quantize_target_names().find("f8_e4m3") != std::string::npos);
  CHECK_FALSE(parse_quantize_target("Q3_K_M"));
  CHECK(quantize_target_names().find("q5_k, q6_k") != std::string::npos);
  CHECK(quantize_target_names().find("Q4_K_M, Q5_K_M") != std::string::npos);
}

TEST_CASE("quantize model: llama.cpp's per-tensor types") {
  QuantizeTarget q4km = target("Q4_K_M"), q8 = target("q8_0"), q4_0 = target("q4_0"), f16 = target("f16");
  auto type = [&](const QuantizeTarget &t, const std::string &name, bool pure = false, bool has_output = true, std::vector<int64_t> shape = {256, 256}) {
    return quantize_type_for(t, pure, name, shape, has_output, 8);
  };
  CHECK(type(q4km, "blk.3.attn_q.weight") == GgmlType::Q4_K);
  CHECK(type(q4km, "output.weight") == GgmlType::Q6_K);
  CHECK(type(q4km, "token_embd.weight") == GgmlType::Q4_K);
  CHECK(type(q4km, "token_embd.weight", false, false) == GgmlType::Q6_K);  // tied: it is the classifier
  // use_more_bits over 8 layers: 0 and 7 (the eighths), and 3, 6 (every third between)
  for (int layer = 0; layer < 8; ++layer) {
    CAPTURE(layer);
    bool more = layer == 0 || layer == 7 || layer == 3 || layer == 6;
    CHECK(type(q4km, fmt::format("blk.{}.attn_v.weight", layer)) == (more ? GgmlType::Q6_K : GgmlType::Q4_K));
    CHECK(type(q4km, fmt::format("blk.{}.ffn_down.weight", layer)) == (more ? GgmlType::Q6_K : GgmlType::Q4_K));
    CHECK(type(q4km, fmt::format("blk.{}.ffn_up.weight", layer)) == GgmlType::Q4_K);
  }
  CHECK(type(q4km, "blk.0.attn_v.weight", true) == GgmlType::Q4_K);  // --pure
  CHECK(type(q4km, "output.weight", true) == GgmlType::Q4_K);
  CHECK(type(q4_0, "output.weight") == GgmlType::Q6_K);
  CHECK(type(q4_0, "blk.0.attn_v.weight") == GgmlType::Q4_0);
  CHECK(type(q8, "output.weight") == GgmlType::Q8_0);
  CHECK(type(f16, "output.weight") == GgmlType::F16);
  CHECK(type(target("f8_e4m3"), "output.weight") == GgmlType::F8_E4M3);  // 8.5 bits: more than Q6_K's, as Q8_0
  // IQ4_NL: the classifier in Q6_K; attn_v in Q5_K with 4 or more query heads a KV head; ffn_down
  // in Q5_K in the first eighth of the layers (layer 0 of 8, layers 0 and 1 of 16)
  const QuantizeTarget iq4 = target("iq4_nl");
  CHECK(iq4.llama_ftype == 25u);
  CHECK(type(iq4, "output.weight") == GgmlType::Q6_K);
  CHECK(type(iq4, "blk.3.attn_q.weight") == GgmlType::IQ4_NL);
  CHECK(quantize_type_for(iq4, false, "blk.3.attn_v.weight", {256, 256}, true, 8, 4) == GgmlType::Q5_K);
  CHECK(quantize_type_for(iq4, false, "blk.3.attn_v.weight", {256, 256}, true, 8, 2) == GgmlType::IQ4_NL);
  CHECK(quantize_type_for(iq4, true, "blk.3.attn_v.weight", {256, 256}, true, 8, 4) == GgmlType::IQ4_NL);
  CHECK(type(iq4, "blk.0.ffn_down.weight") == GgmlType::Q5_K);
  CHECK(type(iq4, "blk.1.ffn_down.weight") == GgmlType::IQ4_NL);
  CHECK(quantize_type_for(iq4, false, "blk.1.ffn_down.weight", {256, 256}, true, 16) == GgmlType::Q5_K);
  CHECK(type(iq4, "blk.0.ffn_down.weight", false, true, {96, 256}) == GgmlType::Q5_1);  // Q5_K's fallback
  CHECK(type(q4km, "blk.0.attn_norm.weight", false, true, {256}) == GgmlType::F32);
  // rows the chosen type's blocks do not divide fall back as llama.cpp's do
  CHECK(type(q4km, "blk.1.attn_q.weight", false, true, {96, 256}) == GgmlType::Q5_0);
  CHECK(type(target("Q5_K_M"), "blk.1.attn_q.weight", false, true, {96, 256}) == GgmlType::Q5_1);
  CHECK(type(q4km, "output.weight", false, true, {96, 256}) == GgmlType::Q8_0);
  CHECK(type(q4km, "blk.1.attn_q.weight", false, true, {40, 256}) == GgmlType::F16);
}

// The output's tensors are the input's, each in quantize_type_for's type, with exactly the bytes
// quantize_row makes from the input's values; the metadata is copied with the file type set.
TEST_CASE("quantize model: every type and mix, the data equal to quantize_row of the input") {
  std::string in = f32_model("quantize-in-f32.gguf");
  GgufFile input(in);
  const int n_gqa = int(input.get_int("llama.attention.head_count") / input.get_int("llama.attention.head_count_kv"));
  for (std::string name : {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k", "q6_k", "f16", "bf16", "Q4_K_M", "Q5_K_M", "iq4_nl", "f8_e4m3"}) {
    CAPTURE(name);
    QuantizeTarget t = target(name);
    std::string out = kdsl::test::scratch_path("quantize-" + name + ".gguf");
    int calls = 0;
    // 3 threads: every matrix's rows split unevenly; the bytes must still be quantize_row's.
    QuantizeSummary s = quantize_model(in, out, t, {.threads = 3}, [&](const QuantizeProgress &) { ++calls; });
    GgufFile output(out);
    REQUIRE(output.tensors().size() == input.tensors().size());
    CHECK(calls == int(input.tensors().size()));
    CHECK(s.tensors == int(input.tensors().size()));
    CHECK(s.bytes_out == std::filesystem::file_size(out) - output.data_offset());
    if (t.llama_ftype) CHECK(output.get_int("general.file_type") == *t.llama_ftype);
    else CHECK_FALSE(output.find_int("general.file_type"));  // kdsl's own type: the input's is not copied either
    CHECK(output.get_string("general.architecture") == input.get_string("general.architecture"));
    CHECK(output.get_int("llama.block_count") == 8);
    std::map<GgmlType, int> seen;
    size_t bad = 0;
    for (const GgufTensorInfo &ti : input.tensors()) {
      const GgufTensorInfo &to = output.tensor(ti.name);
      CHECK(to.shape == ti.shape);
      GgmlType want = ti.shape.size() < 2 ? ti.type : quantize_type_for(t, false, ti.name, ti.shape, true, 8, n_gqa);
      CHECK(to.type == want);
      seen[to.type]++;
      std::vector<std::byte> expect(size_t(GgufWriter::tensor_bytes(want, ti.shape)));
      quantize_row(want, reinterpret_cast<const float *>(ti.data), expect.data(), ti.elements());
      bad += std::memcmp(expect.data(), to.data, expect.size()) != 0;
    }
    CHECK(bad == 0);
    if (name == "Q4_K_M" || name == "Q5_K_M") CHECK(seen[GgmlType::Q6_K] == 1 + 4 + 4);  // output, attn_v and ffn_down of layers 0, 3, 6, 7
    // Loadable as a model by kdsl.
    CHECK_NOTHROW(load_hparams(output));
  }
}

TEST_CASE("quantize model: kdsl-quantize writes a file and a summary, and names bad arguments") {
  std::string exe = std::string(KDSL_TEST_BINARY_DIR) + "/models/kdsl-quantize";
  if (!std::filesystem::exists(exe)) {
    MESSAGE("skipped: " << exe << " is not built");
    return;
  }
  std::string in = f32_model("quantize-tool-in.gguf"), out = kdsl::test::scratch_path("quantize-tool-q4_k_m.gguf"), text;
  std::filesystem::remove(out);
  CHECK(run(exe + " " + in + " " + out + " q4_k_m", &text) == 0);
  CHECK(text.find("[   1/") != std::string::npos);
  CHECK(text.find("kdsl-quantize: wrote " + out + " (Q4_K_M)") != std::string::npos);
  CHECK(text.find("bits per weight") != std::string::npos);
  CHECK(GgufFile(out).tensor("output.weight").type == GgmlType::Q6_K);
  CHECK(run(exe + " -q --pure " + in + " " + out + " Q4_K_M", &text) == 0);
  CHECK(text.find("[   1/") == std::string::npos);
  CHECK(GgufFile(out).tensor("output.weight").type == GgmlType::Q4_K);
  CHECK(text.find("kdsl's own type") == std::string::npos);
  CHECK(run(exe + " -q " + in + " " + out + " f8_e4m3", &text) == 0);
  CHECK(text.find("kdsl-quantize: note: F8_E4M3 is kdsl's own type: llama.cpp and gguf-py cannot read " + out) != std::string::npos);
  CHECK(run(exe + " " + in + " " + out + " q3_k_s", &text) == 1);
  CHECK(text.find("kdsl-quantize: error: type 'q3_k_s' is not one kdsl-quantize writes (expected one of f32, f16") != std::string::npos);
  CHECK(run(exe + " /nonexistent.gguf " + out + " q8_0", &text) == 1);
  CHECK(text.find("/nonexistent.gguf") != std::string::npos);
  CHECK(run(exe + " " + in + " " + in + " q8_0", &text) == 1);
  CHECK(text.find("is the input") != std::string::npos);
}

TEST_CASE("quantize model: llama-quantize's type rules with an importance matrix") {
  auto type_for = [](const std::string &t, bool pure, const std::string &name, int n_gqa = 1) {
    return quantize_type_for(target(t), pure, name, {256, 256}, true, 8, n_gqa, true);
  };
  // Q4_0 / Q5_0: the first eighth's ffn_down goes affine (Q4_1 / Q5_1), only with an imatrix.
  CHECK(type_for("q4_0", false, "blk.0.ffn_down.weight") == GgmlType::Q4_1);
  CHECK(type_for("q5_0", false, "blk.0.ffn_down.weight") == GgmlType::Q5_1);
  CHECK(type_for("q4_0", false, "blk.1.ffn_down.weight") == GgmlType::Q4_0);
  CHECK(type_for("q4_0", false, "blk.0.ffn_up.weight") == GgmlType::Q4_0);
  CHECK(type_for("q4_0", true, "blk.0.ffn_down.weight") == GgmlType::Q4_0);
  CHECK(quantize_type_for(target("q4_0"), false, "blk.0.ffn_down.weight", {256, 256}, true, 8) == GgmlType::Q4_0);
  // IQ4_NL keeps the first eighth's ffn_down in IQ4_NL; the attn_v rule does not depend on it.
  CHECK(type_for("iq4_nl", false, "blk.0.ffn_down.weight") == GgmlType::IQ4_NL);
  CHECK(type_for("iq4_nl", false, "blk.3.attn_v.weight", 4) == GgmlType::Q5_K);
  CHECK(type_for("Q4_K_M", false, "blk.0.ffn_down.weight") == GgmlType::Q6_K);
}

TEST_CASE("quantize model: an importance matrix weighs every matrix it has an entry for") {
  std::string in = f32_model("quantize-imatrix-in.gguf"), out = kdsl::test::scratch_path("quantize-imatrix-q4_k.gguf");
  GgufFile src(in);
  ImportanceMatrix m;
  kdsl::models::Rng rng(5);
  for (const std::string name : {"blk.0.attn_q.weight", "blk.3.ffn_down.weight", "blk.7.attn_output.weight"}) {
    std::vector<float> rows(3 * 256);
    for (float &v : rows) v = float(rng.uniform() < 0.05 ? 20 * rng.uniform() : rng.uniform() - 0.5);
    m.add(name, rows, 256);
  }
  m.add("blk.9.attn_q.weight", std::vector<float>(256, 1.0f), 256);  // no such tensor: unused, as llama-quantize ignores it
  m.datasets = {"calibration.txt"};
  m.chunk_count = 4;
  QuantizeSummary s = quantize_model(in, out, target("q4_k"), {.pure = true, .threads = 2, .imatrix = &m, .imatrix_file = "calib.imatrix.gguf"});
  CHECK(s.weighted == 3);
  GgufFile q(out);
  CHECK(q.get_string("quantize.imatrix.file") == "calib.imatrix.gguf");
  CHECK(q.get_string("quantize.imatrix.dataset") == "calibration.txt");
  CHECK(q.get_int("quantize.imatrix.entries_count") == 4);
  CHECK(q.get_int("quantize.imatrix.chunks_count") == 4);
  int weighted_seen = 0;
  for (const GgufTensorInfo &t : q.tensors()) {
    if (t.shape.size() < 2) continue;
    CAPTURE(t.name);
    const GgufTensorInfo &from = src.tensor(t.name);
    const ImportanceEntry *e = m.find(t.name);
    std::vector<float> importance = e ? e->mean_squares() : std::vector<float>{};
    const int64_t cols = t.shape[0], rows = t.elements() / cols, row_bytes = int64_t(GgufWriter::tensor_bytes(t.type, {cols}));
    std::vector<std::byte> want(static_cast<size_t>(row_bytes)), plain(static_cast<size_t>(row_bytes));
    bool differs = false;
    for (int64_t r = 0; r < rows; ++r) {
      const float *x = reinterpret_cast<const float *>(from.data) + r * cols;
      quantize_row(t.type, x, want.data(), cols, e ? importance.data() : nullptr);
      REQUIRE(std::memcmp(want.data(), t.data + r * row_bytes, size_t(row_bytes)) == 0);
      quantize_row(t.type, x, plain.data(), cols);
      differs |= plain != want;
    }
    CHECK(differs == (e != nullptr));  // the weighted rows are not the reference quantizer's
    weighted_seen += e != nullptr;
  }
  CHECK(weighted_seen == 3);

  ImportanceMatrix wrong;  // an importance matrix of another model: rows of another length
  wrong.add("blk.0.attn_k.weight", std::vector<float>(128, 1.0f), 128);
  const std::string message = "other.imatrix: entry 'blk.0.attn_k.weight' has 128 columns, but " + in;
  CHECK_THROWS_WITH_AS(quantize_model(in, out, target("q4_k"), {.imatrix = &wrong, .imatrix_file = "other.imatrix"}),
                       doctest::Contains(message.c_str()), kdsl::Error);
}

// llama.cpp's own Python reader (the gguf package: $KDSL_TEST_PYTHON, else build/py-gguf, the
// venv scripts/install-deps.sh makes, else python3) reads the file back: every tensor's type
// name and shape as written, its values as kdsl's reference dequantizer gives them (gguf's
// numpy dequantizers), and for the types gguf-py can quantize, the very bytes.
TEST_CASE("quantize model: the gguf Python package reads kdsl-quantize's files back") {
  const char *env = std::getenv("KDSL_TEST_PYTHON");
  std::string venv = std::string(KDSL_TEST_BINARY_DIR) + "/py-gguf/bin/python", text;
  std::string python = env && *env ? env : std::filesystem::exists(venv) ? venv : "python3";
  if (run(python + " -c 'import gguf, numpy'", &text) != 0) {
    MESSAGE("skipped: " << python << " cannot import gguf and numpy (set KDSL_TEST_PYTHON to a python that can; scripts/install-deps.sh makes one)");
    return;
  }
  std::string in = f32_model("quantize-py-in.gguf");
  std::string script = kdsl::test::scratch_path("read_gguf.py");
  {
    std::ofstream f(script);
    f << R"(import sys, numpy as np, gguf
from gguf import quants
src = {t.name: np.array(t.data, dtype=np.float32) for t in gguf.GGUFReader(sys.argv[1]).tensors}
for t in gguf.GGUFReader(sys.argv[2]).tensors:
    shape = [int(x) for x in t.shape]
    values = quants.dequantize(np.array(t.data), t.tensor_type).astype(np.float64).reshape(-1)
    same = -1
    try:
        mine = quants.quantize(src[t.name].reshape(shape[::-1]), t.tensor_type)
        same = int(np.array_equal(np.array(t.data).reshape(-1).view(np.uint8), mine.reshape(-1).view(np.uint8)))
    except (NotImplementedError, KeyError, ValueError):
        pass
    print(t.name, t.tensor_type.name, ",".join(map(str, shape)), repr(float(values.sum())), repr(float((values * values).sum())), same)
)";
  }
  for (std::string name : {"q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "Q4_K_M", "Q5_K_M", "q6_k", "bf16", "iq4_nl"}) {
    CAPTURE(name);
    std::string out = kdsl::test::scratch_path("quantize-py-" + name + ".gguf");
    quantize_model(in, out, target(name));
    REQUIRE(run(python + " " + script + " " + in + " " + out, &text) == 0);
    GgufFile file(out);
    std::istringstream lines(text);
    size_t seen = 0, exact = 0, compared = 0;
    for (std::string tname, type, shape; lines >> tname >> type >> shape;) {
      double sum, sumsq;
      int same;
      lines >> sum >> sumsq >> same;
      CAPTURE(tname);
      const GgufTensorInfo &t = file.tensor(tname);
      CHECK(type == std::string(ggml_type_traits(t.type).ggml_name));
      std::string want_shape;
      for (int64_t d : t.shape) want_shape += (want_shape.empty() ? "" : ",") + std::to_string(d);
      CHECK(shape == want_shape);
      std::vector<float> v(size_t(t.elements()));
      dequantize_row(t.type, t.data, v.data(), t.elements());
      double s = 0, ss = 0;
      for (float x : v) s += x, ss += double(x) * x;
      CHECK(std::fabs(sumsq - ss) <= 1e-9 * ss + 1e-12);
      CHECK(std::fabs(sum - s) <= 1e-9 * std::sqrt(ss * double(v.size())) + 1e-12);
      if (same >= 0) compared++, exact += size_t(same);
      seen++;
    }
    CHECK(seen == file.tensors().size());
    // gguf-py's numpy quantizers are ggml's reference algorithms: the bytes agree (a float
    // rounding tie may differ in one tensor in a hundred).
    CHECK(exact * 100 >= compared * 99);
    MESSAGE(name << ": " << exact << " of " << compared << " tensors byte-identical to gguf-py's quantizer");
  }
}
