// engine_decode_graph_test.cpp - decode steps captured once as a LaunchGraph and replayed on the CPU: positions from device memory, fixed splits, recapture after the scratch moves
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <kdsl/kdsl.h>

#include "models/engine/engine.h"
#include "models/synth/synth_model.h"
#include "tests/models/logit_error.h"
#include "tests/models/reference_forward.h"
#include "tests/models/shared_models.h"
#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl::models;

namespace {

using kdsl::test::relative_error;

TEST_CASE("engine: decode through a LaunchGraph on the CPU matches the float64 reference at every step, before and after a recapture") {
  std::string path = test::scratch_path("decode-graph-tiny.gguf");
  write_synthetic_model(synth_preset("tiny"), path);
  ModelWeights model = load_model_weights(path);
  // 16 workers and a context of 400 split the graph's decode attention 4 ways, sized for 400
  // positions: at these positions the last splits attend to nothing.
  Engine engine(model, Device::cpu(16), EngineOptions{.context = 400, .page_size = 16, .max_batch = 5, .decode_graph = DecodeGraph::On});
  test::ReferenceForward reference(model);
  const int vocab = int(model.hparams.n_vocab);
  std::vector<int> prompt;
  for (int i = 0; i < 11; ++i) prompt.push_back((i * 97 + 3) % vocab);
  std::vector<double> want;
  for (int p = 0; p < int(prompt.size()); ++p) want = reference.forward(prompt[size_t(p)], p);
  CHECK(relative_error(engine.forward(prompt, 0), want) < 1e-4);
  for (int p = int(prompt.size()); p < 40; ++p) {
    int token[1] = {(p * 31) % vocab};
    want = reference.forward(token[0], p);
    CAPTURE(p);
    CHECK(relative_error(engine.forward(token, p), want) < 1e-4);
    if (p == 20) {
      // Another use of the Library grows its scratch (its first argmax): the graph's pointers
      // are stale, and the next step captures afresh.
      const uint64_t generation = engine.kernels().scratch_generation();
      Buffer<float> scores(engine.device(), 8);
      engine.kernels().argmax(scores.data(), 8);
      CHECK(engine.kernels().scratch_generation() != generation);
    }
  }
  std::filesystem::remove(path);
}

TEST_CASE("engine: greedy decode with and without the decode graph picks the same tokens, logits within f32 rounding") {
  std::string path = test::scratch_path("decode-graph-greedy.gguf");
  write_synthetic_model(synth_preset("tiny"), path);
  ModelWeights model = load_model_weights(path);
  Engine eager(model, Device::cpu(), EngineOptions{.context = 300, .page_size = 32, .decode_graph = DecodeGraph::Off});
  Engine graph(model, Device::cpu(), EngineOptions{.context = 300, .page_size = 32, .decode_graph = DecodeGraph::On});
  std::vector<int> prompt = {1, 5, 9, 13, 17};
  auto argmax = [](std::span<const float> logits) { return int(std::max_element(logits.begin(), logits.end()) - logits.begin()); };
  int a = argmax(eager.forward(prompt, 0)), b = argmax(graph.forward(prompt, 0));
  REQUIRE(a == b);
  for (int p = int(prompt.size()); p < 150; ++p) {
    int token[1] = {a};
    std::span<const float> le = eager.forward(token, p);
    std::vector<double> want(le.begin(), le.end());
    std::span<const float> lg = graph.forward(token, p);
    CAPTURE(p);
    CHECK(relative_error(lg, want) < 1e-5);
    a = argmax(le), b = argmax(lg);
    REQUIRE(a == b);
  }
  std::filesystem::remove(path);
}

TEST_CASE("engine: speculative checks (forward_rows, forward_tree) through their graphs give the eager checks' logits, each row count its own graph") {
  std::string path = test::scratch_path("decode-graph-checks.gguf");
  write_synthetic_model(synth_preset("tiny"), path);
  ModelWeights model = load_model_weights(path);
  const EngineOptions base{.context = 200, .page_size = 16, .max_batch = 16, .max_logit_rows = 6};
  EngineOptions with_graph = base, without = base;
  with_graph.decode_graph = DecodeGraph::On;
  without.decode_graph = DecodeGraph::Off;
  Engine eager(model, Device::cpu(), without), graph(model, Device::cpu(), with_graph);
  const int vocab = int(model.hparams.n_vocab);
  std::vector<int> prompt = {1, 5, 9, 13, 17, 21, 25};
  eager.forward(prompt, 0);
  graph.forward(prompt, 0);
  int pos = int(prompt.size());
  // Checks of every size, each at two positions (the second replays the first's graph), then a
  // decode step between them: rows of one check overwrite the last one's rejected drafts.
  for (int round = 0; round < 2; ++round)
    for (int n = 1; n <= 6; ++n) {
      std::vector<int> rows;
      for (int i = 0; i < n; ++i) rows.push_back((pos * 7 + i * 13) % vocab);
      CAPTURE(n);
      CAPTURE(pos);
      std::span<const float> le = eager.forward_rows(rows, pos);
      std::vector<double> want(le.begin(), le.end());
      CHECK(relative_error(graph.forward_rows(rows, pos), want) < 1e-5);
      pos += 1 + round;  // keep the first draft, as an accepted one
    }
  // Token trees: each size its own graph, the node positions and ancestors copied before it.
  const std::vector<std::vector<int>> shapes = {{-1, 0, 0}, {-1, 0, 1, 1, 0}, {-1, 0, 0}};
  for (const std::vector<int> &parents : shapes) {
    std::vector<int> nodes;
    for (size_t i = 0; i < parents.size(); ++i) nodes.push_back((pos * 5 + int(i) * 11) % vocab);
    CAPTURE(parents.size());
    CAPTURE(pos);
    std::span<const float> le = eager.forward_tree(nodes, parents, pos);
    std::vector<double> want(le.begin(), le.end());
    CHECK(relative_error(graph.forward_tree(nodes, parents, pos), want) < 1e-5);
    const std::vector<int> branch = {0, 2};
    eager.keep_branch(branch, pos);
    graph.keep_branch(branch, pos);
    pos += 2;
  }
  std::filesystem::remove(path);
}

}  // namespace
