// importance_matrix_test.cpp - importance matrices: the sums, llama.cpp's two file forms and their errors, and collection against a float64 forward pass
#include <doctest/doctest.h>

#include <kdsl/kdsl.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

#include "models/engine/engine.h"
#include "models/eval/collect_importance.h"
#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_writer.h"
#include "models/gguf/importance_matrix.h"
#include "models/synth/synth_model.h"
#include "tests/models/reference_forward.h"
#include "tests/models/shared_models.h"
#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl::models;

namespace {

template <class T>
void put(std::string &bytes, T v) {
  bytes.append(reinterpret_cast<const char *>(&v), sizeof v);
}

void write_bytes(const std::string &path, const std::string &bytes) { std::ofstream(path, std::ios::binary) << bytes; }

std::string load_error(const std::string &path) {
  try {
    ImportanceMatrix::load(path);
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

// An importance-matrix GGUF with `sums` and `counts` tensors as given (types and shapes free).
std::string imatrix_gguf(const std::string &name, const std::vector<std::tuple<std::string, std::vector<int64_t>, std::vector<float>>> &tensors) {
  GgufWriter w;
  w.set("general.type", GgufValue("imatrix"));
  for (const auto &[tname, shape, values] : tensors) w.add_tensor(tname, shape, GgmlType::F32, std::as_bytes(std::span<const float>(values)));
  std::string path = test::scratch_path(name);
  w.write(path);
  return path;
}

}  // namespace

TEST_CASE("importance matrix: per column the sum of squared activations and the rows summed") {
  ImportanceMatrix m;
  const std::vector<float> rows = {1, -2, 3, 0.5f, 0, -1};  // two rows of three
  m.add("blk.0.attn_q.weight", rows, 3);
  m.add("blk.0.attn_q.weight", std::span<const float>(rows).first(3), 3);
  const ImportanceEntry *e = m.find("blk.0.attn_q.weight");
  REQUIRE(e);
  CHECK(e->rows == 3);
  CHECK(e->sum_squares == std::vector<double>{2.25, 8, 19});
  CHECK(e->mean_squares() == std::vector<float>{0.75f, 8.0f / 3, 19.0f / 3});
  CHECK(ImportanceEntry{{4, 4}, 0}.mean_squares() == std::vector<float>{1, 1});  // no rows yet: as llama-quantize reads it
  CHECK_FALSE(m.find("blk.0.attn_k.weight"));
  CHECK_THROWS_WITH_AS(m.add("blk.0.attn_q.weight", rows, 2), doctest::Contains("'blk.0.attn_q.weight' was given rows of 2 columns, earlier of 3"),
                       Error);
}

TEST_CASE("importance matrix: saved as llama-imatrix's GGUF and read back") {
  ImportanceMatrix m;
  m.add("blk.1.ffn_down.weight", std::vector<float>{1, 2, 3, 4}, 4);
  m.add("blk.0.attn_q.weight", std::vector<float>{0.5f, -0.5f, 1, 1}, 2);
  m.datasets = {"calibration.txt"};
  m.chunk_count = 2, m.chunk_size = 8;
  std::string path = test::scratch_path("imatrix-roundtrip.gguf");
  m.save(path);

  GgufFile f(path);  // the layout llama-quantize looks for
  CHECK(f.get_string("general.type") == "imatrix");
  CHECK(f.get_string_array("imatrix.datasets") == std::vector<std::string>{"calibration.txt"});
  CHECK(f.get_int("imatrix.chunk_count") == 2);
  CHECK(f.get_int("imatrix.chunk_size") == 8);
  REQUIRE(f.tensors().size() == 4);
  CHECK(f.tensors()[0].name == "blk.0.attn_q.weight.in_sum2");  // sorted by name, as llama-imatrix writes them
  CHECK(f.tensors()[0].shape == std::vector<int64_t>{2, 1});
  CHECK(f.tensors()[1].name == "blk.0.attn_q.weight.counts");
  CHECK(f.tensors()[1].shape == std::vector<int64_t>{1, 1});
  float count;
  std::memcpy(&count, f.tensors()[1].data, 4);
  CHECK(count == 2);

  ImportanceMatrix back = ImportanceMatrix::load(path);
  CHECK(back.datasets == m.datasets);
  CHECK(back.chunk_count == 2);
  CHECK(back.chunk_size == 8);
  REQUIRE(back.entries.size() == 2);
  CHECK(back.find("blk.0.attn_q.weight")->sum_squares == std::vector<double>{1.25, 1.25});
  CHECK(back.find("blk.0.attn_q.weight")->rows == 2);
  CHECK(back.find("blk.1.ffn_down.weight")->sum_squares == std::vector<double>{1, 4, 9, 16});
  CHECK(back.find("blk.1.ffn_down.weight")->rows == 1);

  CHECK_THROWS_WITH_AS(ImportanceMatrix{}.save(test::scratch_path("imatrix-empty.gguf")), doctest::Contains("no importance data to write"), Error);
}

TEST_CASE("importance matrix: the older .dat form, values stored as mean square times calls") {
  std::string bytes;
  put<int32_t>(bytes, 2);
  for (auto [name, ncall, values] : {std::tuple<std::string, int32_t, std::vector<float>>{"blk.0.attn_k.weight", 4, {8, 2}},
                                     {"blk.0.ffn_up.weight", 0, {3}}}) {
    put<int32_t>(bytes, int32_t(name.size()));
    bytes += name;
    put<int32_t>(bytes, ncall);
    put<int32_t>(bytes, int32_t(values.size()));
    for (float v : values) put(bytes, v);
  }
  std::string path = test::scratch_path("imatrix-legacy.dat");
  write_bytes(path, bytes);  // without the optional trailer
  ImportanceMatrix m = ImportanceMatrix::load(path);
  REQUIRE(m.entries.size() == 2);
  CHECK(m.find("blk.0.attn_k.weight")->mean_squares() == std::vector<float>{2, 0.5f});
  CHECK(m.find("blk.0.ffn_up.weight")->mean_squares() == std::vector<float>{1});  // no calls: all 1, as llama-quantize
  CHECK(m.chunk_count == 0);
  CHECK(m.datasets.empty());

  put<int32_t>(bytes, 7);  // the trailer: chunks and the dataset's name
  put<int32_t>(bytes, 8);
  bytes += "wiki.txt";
  write_bytes(path, bytes);
  m = ImportanceMatrix::load(path);
  CHECK(m.chunk_count == 7);
  CHECK(m.datasets == std::vector<std::string>{"wiki.txt"});

  // Cut anywhere inside an entry: the error names the file and what it was reading.
  write_bytes(path, bytes.substr(0, 30));
  CHECK(load_error(path).find(path) != std::string::npos);
  CHECK(load_error(path).find("entry 0 ('blk.0.attn_k.weight')") != std::string::npos);
  write_bytes(path, bytes.substr(0, 6));
  CHECK(load_error(path).find("entry 0 name") != std::string::npos);
  write_bytes(path, std::string("\xff\xff\xff\xff", 4));
  CHECK(load_error(path).find("entry count -1: expected at least 1") != std::string::npos);
  std::string huge = bytes.substr(0, 4);
  put<int32_t>(huge, 1 << 30);
  write_bytes(path, huge);
  CHECK(load_error(path).find("runs past the end of the file") != std::string::npos);
  CHECK(load_error(test::scratch_path("no-such-imatrix.dat")).find("cannot open the importance matrix") != std::string::npos);
}

TEST_CASE("importance matrix: malformed GGUF files are refused naming the file and entry") {
  const std::vector<float> sums = {1, 2}, one = {3};
  std::string path = imatrix_gguf("imatrix-no-counts.gguf", {{"blk.0.attn_q.weight.in_sum2", {2, 1}, sums}});
  CHECK(load_error(path) == path + ": entry 'blk.0.attn_q.weight' has .in_sum2 but no .counts tensor");
  path = imatrix_gguf("imatrix-experts.gguf", {{"blk.0.attn_q.weight.in_sum2", {1, 2}, sums}, {"blk.0.attn_q.weight.counts", {1, 2}, sums}});
  CHECK(load_error(path).find("entry 'blk.0.attn_q.weight': 2 matrices of 2 values: kdsl's models have one matrix per weight") != std::string::npos);
  path = imatrix_gguf("imatrix-nan.gguf", {{"w.in_sum2", {2, 1}, {1, std::numeric_limits<float>::quiet_NaN()}}, {"w.counts", {1, 1}, one}});
  CHECK(load_error(path).find("entry 'w': sum of squares 1 is nan: expected a finite value >= 0") != std::string::npos);
  path = imatrix_gguf("imatrix-count.gguf", {{"w.in_sum2", {2, 1}, sums}, {"w.counts", {1, 1}, {2.5f}}});
  CHECK(load_error(path).find("tensor 'w.counts': count 2.5 is not a whole number of rows") != std::string::npos);
  path = imatrix_gguf("imatrix-model.gguf", {{"blk.0.attn_q.weight", {2, 1}, sums}});
  CHECK(load_error(path).find("no importance data") != std::string::npos);
  GgufWriter w;  // sums in f16
  w.add_tensor("w.in_sum2", {2, 1}, GgmlType::F16, std::as_bytes(std::span<const float>(one)));
  w.add_tensor("w.counts", {1, 1}, GgmlType::F32, std::as_bytes(std::span<const float>(one)));
  path = test::scratch_path("imatrix-f16.gguf");
  w.write(path);
  CHECK(load_error(path).find("tensor 'w.in_sum2': type F16, expected F32") != std::string::npos);
}

TEST_CASE("collect importance: every product's input rows summed, against a float64 forward pass") {
  SynthConfig c = synth_preset("tiny");
  std::string path = test::scratch_path("imatrix-collect.gguf");
  write_synthetic_model(c, path);
  ModelWeights model = load_model_weights(path);
  const int context = 8, vocab = int(model.hparams.n_vocab);
  std::vector<int> tokens;
  for (int i = 0; i < 2 * context + 3; ++i) tokens.push_back((i * 37 + 5) % vocab);  // two chunks and a dropped tail

  for (bool keep_output : {false, true}) {
    CAPTURE(keep_output);
    Engine engine(model, kdsl_test::cpu(), EngineOptions{.context = context, .page_size = 4, .max_batch = 5, .max_logit_rows = context});
    ImportanceMatrix m;
    int calls = 0;
    int chunks = collect_importance(engine, tokens, ImportanceOptions{.context = context, .bos = 1, .keep_output = keep_output}, m,
                                    [&](int done, int total) {
                                      CHECK(done == ++calls);
                                      CHECK(total == 2);
                                    });
    CHECK(chunks == 2);
    CHECK(m.chunk_count == 2);
    CHECK(m.chunk_size == context);

    // The float64 pass over the same chunks, BOS first, each from an empty cache.
    std::map<std::string, std::pair<std::vector<double>, int64_t>> want;
    for (int chunk = 0; chunk < 2; ++chunk) {
      test::ReferenceForward ref(model);
      ref.observe = [&](TensorName t, int layer, const std::vector<double> &x) {
        if (t == TensorName::Output && !keep_output) return;
        auto &[sums, rows] = want[tensor_name(t, layer)];
        sums.resize(x.size());
        for (size_t j = 0; j < x.size(); ++j) sums[j] += x[j] * x[j];
        ++rows;
      };
      for (int i = 0; i < context; ++i) ref.forward(i == 0 ? 1 : tokens[size_t(chunk * context + i)], i);
    }
    REQUIRE(m.entries.size() == want.size());
    CHECK(m.entries.size() == model.layers.size() * 7 + (keep_output ? 1 : 0));
    for (const auto &[name, expected] : want) {
      CAPTURE(name);
      const ImportanceEntry *e = m.find(name);
      REQUIRE(e);
      CHECK(e->rows == expected.second);
      REQUIRE(e->sum_squares.size() == expected.first.size());
      for (size_t j = 0; j < expected.first.size(); ++j) CHECK(kdsl_test::close_enough(e->sum_squares[j], expected.first[j], 1e-4, 1e-6));
    }
    // The observer goes with the collection: a later pass adds nothing.
    engine.forward(std::span<const int>(tokens).first(3), 0);
    CHECK(m.entries.begin()->second.rows == 2 * context);
  }

  Engine small(model, kdsl_test::cpu(), EngineOptions{.context = context, .page_size = 4, .max_batch = 5, .max_logit_rows = 1});
  ImportanceMatrix m;
  CHECK_THROWS_WITH_AS(collect_importance(small, std::span<const int>(tokens).first(5), ImportanceOptions{.context = context}, m),
                       doctest::Contains("the text has 5 tokens, fewer than one chunk of 8"), Error);
  CHECK_THROWS_WITH_AS(collect_importance(small, tokens, ImportanceOptions{.context = context, .keep_output = true}, m),
                       doctest::Contains("needs logits of all 8 rows (the engine keeps 1)"), Error);
}
