// engine_cuda_test.cpp - the engine on a CUDA device, through the fake libcuda (tests/runtime/fake_libcuda.c): weights
// uploaded once, every kernel launched on the GPU, and nothing allocated or copied per token but the token id in and the
// logits out. Nothing executes (the fake records launches), so the numbers are checked on the CPU tests, not here.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <kdsl/kdsl.h>

#include "codegen/nvptx/ptxas.h"
#include "models/common/warning.h"
#include "models/engine/engine.h"
#include "models/synth/synth_model.h"
#include "runtime/cuda/cuda_device.h"
#include "tests/models/shared_models.h"

namespace {
using namespace kdsl;
using namespace kdsl::models;

struct FakeCounters {
  long long (*allocs)() = nullptr;
  long long (*htod_bytes)() = nullptr;
  long long (*dtoh_bytes)() = nullptr;
  int (*launches)() = nullptr;
  int (*graph_launches)() = nullptr;
  int (*graphs_live)() = nullptr;
  int (*captures)() = nullptr;
  void (*fail_next_capture)(int) = nullptr;
  void (*set_params)(int, const size_t *) = nullptr;
};

struct FakeGpu {
  cuda::Driver driver = cuda::load_driver(KDSL_FAKE_LIBCUDA);
  FakeCounters count;
  FakeGpu() {
    void *h = dlopen(KDSL_FAKE_LIBCUDA, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    REQUIRE(h);
    count.allocs = reinterpret_cast<long long (*)()>(dlsym(h, "fake_cuda_allocs"));
    count.htod_bytes = reinterpret_cast<long long (*)()>(dlsym(h, "fake_cuda_htod_bytes"));
    count.dtoh_bytes = reinterpret_cast<long long (*)()>(dlsym(h, "fake_cuda_dtoh_bytes"));
    count.launches = reinterpret_cast<int (*)()>(dlsym(h, "fake_cuda_launches"));
    count.graph_launches = reinterpret_cast<int (*)()>(dlsym(h, "fake_cuda_graph_launches"));
    count.graphs_live = reinterpret_cast<int (*)()>(dlsym(h, "fake_cuda_graphs_live"));
    count.captures = reinterpret_cast<int (*)()>(dlsym(h, "fake_cuda_captures"));
    count.fail_next_capture = reinterpret_cast<void (*)(int)>(dlsym(h, "fake_cuda_fail_next_capture"));
    count.set_params = reinterpret_cast<void (*)(int, const size_t *)>(dlsym(h, "fake_cuda_set_params"));
    count.set_params(0, nullptr);  // record no argument bytes: the engine's kernels take many
  }
  Device device() { return Device(std::make_shared<detail::CudaDevice>(0, driver)); }
};

// The engine's kernels call exp, which the toolkit's libdevice gives.
bool have_libdevice() {
  if (!codegen::nvptx::find_libdevice().empty()) return true;
  MESSAGE("skipped: no CUDA toolkit with libdevice (the engine's kernels call exp) under /usr/local/cuda");
  return false;
}

// Launches of one decode step with the norms, residual adds and SwiGLU fused into the
// products: per layer the q, k and v product, rope, KV append, attention (one split at these
// contexts), the output product, the gate, up and SwiGLU product, the down product; then the
// embedding and the logits.
int decode_step_launches(const ModelWeights &model) { return int(model.layers.size()) * 7 + 2; }

TEST_CASE("engine on a CUDA device: weights uploaded once, then per token its id and position in, one CUDA graph, the logits out") {
  if (!have_libdevice()) return;
  std::string path = test::scratch_path("engine-cuda-tiny.gguf");
  SynthConfig config = synth_preset("tiny");
  write_synthetic_model(config, path);
  ModelWeights model = load_model_weights(path);
  FakeGpu fake;
  Device gpu = fake.device();

  long long htod_before = fake.count.htod_bytes();
  Engine engine(model, gpu, EngineOptions{.context = 64, .page_size = 16, .max_logit_rows = 4});
  CHECK(engine.device().kind() == Device::Kind::Cuda);
  // Every matrix, norm and the token table, once (the classifier is untied in the tiny preset).
  int64_t weights = model.bytes_per_token() + model.token_embd.bytes();
  CHECK(engine.uploaded_bytes() == weights);
  CHECK(fake.count.htod_bytes() - htod_before >= weights);
  // q, k and v, and gate and up, lie back to back, so that decode reads each group in one product.
  for (const LayerWeights &l : engine.weights().layers) {
    auto end = [](const Weight &w) { return static_cast<const uint8_t *>(w.data) + w.bytes(); };
    CHECK(end(l.wq) == l.wk.data);
    CHECK(end(l.wk) == l.wv.data);
    CHECK(end(l.w_gate) == l.w_up.data);
    CHECK(reinterpret_cast<uintptr_t>(l.wq.data) % 256 == 0);
  }

  std::vector<int> prompt = {1, 5, 9, 13, 17};
  int launches = fake.count.launches();
  std::span<const float> logits = engine.forward(prompt, 0);
  CHECK(logits.size() == size_t(model.hparams.n_vocab));
  CHECK(fake.count.launches() > launches + int(model.layers.size()) * 8);

  int token[1] = {42};
  int pos = int(prompt.size());
  // The first decode step runs its launches (compiling the decode kernels, growing scratch),
  // then captures them as a CUDA graph; every later step replays it.
  const int graphs = fake.count.graphs_live(), captures = fake.count.captures();
  engine.forward(token, pos++);
  CHECK(fake.count.graphs_live() == graphs + 2);  // the graph and its instantiation
  CHECK(fake.count.captures() == captures + 1);
  const long long allocs = fake.count.allocs(), htod = fake.count.htod_bytes(), dtoh = fake.count.dtoh_bytes();
  launches = fake.count.launches();
  const int graph_launches = fake.count.graph_launches();
  const int steps = 3;
  for (int i = 0; i < steps; ++i) engine.forward(token, pos++);
  CHECK(fake.count.allocs() == allocs);
  CHECK(fake.count.htod_bytes() - htod == steps * 2 * int64_t(sizeof(int32_t)));                   // the token id and its position
  CHECK(fake.count.dtoh_bytes() - dtoh == steps * int64_t(sizeof(float)) * model.hparams.n_vocab);  // the logits
  CHECK(fake.count.graph_launches() - graph_launches == steps);
  CHECK(fake.count.captures() == captures + 1);  // captured once
  const int per_step = (fake.count.launches() - launches) / steps;
  CHECK((fake.count.launches() - launches) % steps == 0);
  CHECK(per_step == decode_step_launches(model));
  MESSAGE("per decode step: ", per_step, " launches for ", model.layers.size(), " layers");

  // A speculative check of the last token and 3 drafts: 4 ids and their positions in, 4 rows of
  // logits out, no allocation; captured as a graph of its own the first time, replayed after.
  std::vector<int> check = {42, 7, 8, 9};
  engine.forward_rows(check, pos);  // the few-rows kernels compile here
  CHECK(fake.count.captures() == captures + 2);
  const long long allocs_check = fake.count.allocs(), htod_check = fake.count.htod_bytes(), dtoh_check = fake.count.dtoh_bytes();
  const int check_graphs = fake.count.graph_launches();
  std::span<const float> rows = engine.forward_rows(check, pos + 1);
  CHECK(fake.count.graph_launches() == check_graphs + 1);
  CHECK(rows.size() == 4 * size_t(model.hparams.n_vocab));
  CHECK(fake.count.allocs() == allocs_check);
  CHECK(fake.count.htod_bytes() - htod_check == 2 * 4 * int64_t(sizeof(int32_t)));
  CHECK(fake.count.dtoh_bytes() - dtoh_check == 4 * int64_t(sizeof(float)) * model.hparams.n_vocab);

  // A token tree: the tree kernels (rope at given positions, tree attention, the branch's KV
  // move) compile for the GPU and run with no allocation; in go the ids, the node positions
  // and ancestor sets, and the branch's moves.
  std::vector<int> tree = {42, 7, 8, 9}, parents = {-1, 0, 0, 2};
  std::vector<int> branch = {0, 2, 3};
  engine.forward_tree(tree, parents, pos);  // compiles here
  engine.keep_branch(branch, pos);
  const long long allocs_tree = fake.count.allocs(), htod_tree = fake.count.htod_bytes(), dtoh_tree = fake.count.dtoh_bytes();
  launches = fake.count.launches();
  const int tree_graphs = fake.count.graph_launches();
  rows = engine.forward_tree(tree, parents, pos + 1);
  CHECK(fake.count.graph_launches() == tree_graphs + 1);  // the tree check's own graph
  CHECK(rows.size() == 4 * size_t(model.hparams.n_vocab));
  engine.keep_branch(branch, pos + 1);
  CHECK(fake.count.allocs() == allocs_tree);
  // Per node its id and slot, its position and its ancestor set; then the branch's two moves.
  CHECK(fake.count.htod_bytes() - htod_tree ==
        4 * int64_t(2 * sizeof(int32_t) + sizeof(int32_t) + sizeof(int64_t)) + 2 * 2 * int64_t(sizeof(int32_t)));
  CHECK(fake.count.dtoh_bytes() - dtoh_tree == 4 * int64_t(sizeof(float)) * model.hparams.n_vocab);
  CHECK(fake.count.launches() - launches >= int(model.layers.size()) * 11);  // and one KV move per layer

  // The Library's scratch grown by another call (its first argmax) moves under the graphs: the
  // next decode step captures afresh, and the stale graph is let go.
  const int captured = fake.count.captures();
  engine.forward(token, 20);
  CHECK(fake.count.captures() == captured);
  Buffer<float> scores(gpu, 10);
  engine.kernels().argmax(scores.data(), 10);
  engine.forward(token, 21);
  CHECK(fake.count.captures() == captured + 1);
  CHECK(fake.count.graphs_live() == graphs + 6);  // the decode step's, the check's and the tree's
  std::filesystem::remove(path);
}

TEST_CASE("engine on a CUDA device: a capture the driver refuses is said once, and decoding goes on without graphs") {
  if (!have_libdevice()) return;
  std::string path = test::scratch_path("engine-cuda-tiny-refused.gguf");
  write_synthetic_model(synth_preset("tiny"), path);
  ModelWeights model = load_model_weights(path);
  FakeGpu fake;
  REQUIRE(bool(fake.count.fail_next_capture));
  Engine engine(model, fake.device(), EngineOptions{.context = 64, .page_size = 16});
  std::vector<std::string> warnings;
  WarningSink previous = set_warning_sink([&](const std::string &w) { warnings.push_back(w); });
  int token[1] = {42};
  const int captures = fake.count.captures();
  fake.count.fail_next_capture(801);  // CUDA_ERROR_NOT_SUPPORTED
  engine.forward(token, 0);
  const int graph_launches = fake.count.graph_launches(), launches = fake.count.launches();
  engine.forward(token, 1);
  engine.forward(token, 2);
  set_warning_sink(previous);
  REQUIRE(warnings.size() == 1);
  INFO(warnings[0]);
  CHECK(warnings[0].find("decoding without graphs: LaunchGraph::capture on cuda:0") == 0);
  CHECK(warnings[0].find("cuStreamBeginCapture failed") != std::string::npos);
  CHECK(fake.count.captures() == captures);
  CHECK(fake.count.graph_launches() == graph_launches);
  CHECK(fake.count.launches() - launches == 2 * decode_step_launches(model));  // eager
  std::filesystem::remove(path);
}

TEST_CASE("engine on a CUDA device: --decode-graph off launches each decode kernel, with the token id alone copied in") {
  if (!have_libdevice()) return;
  std::string path = test::scratch_path("engine-cuda-tiny-eager.gguf");
  write_synthetic_model(synth_preset("tiny"), path);
  ModelWeights model = load_model_weights(path);
  FakeGpu fake;
  Engine engine(model, fake.device(), EngineOptions{.context = 64, .page_size = 16, .decode_graph = DecodeGraph::Off});
  int token[1] = {42};
  engine.forward(token, 0);
  const long long htod = fake.count.htod_bytes();
  const int launches = fake.count.launches(), graph_launches = fake.count.graph_launches();
  engine.forward(token, 1);
  CHECK(fake.count.htod_bytes() - htod == int64_t(sizeof(int32_t)));
  CHECK(fake.count.graph_launches() == graph_launches);
  CHECK(fake.count.launches() - launches == decode_step_launches(model));
  std::filesystem::remove(path);
}

}  // namespace
