// kdsl-bench-tune: each tuned Library product on a model's matrix shapes, the hand-set default against the autotuned pick, interleaved best-of rounds
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <kdsl/autotune.h>
#include <kdsl/kdsl.h>

#include "jit_cache/disk_cache.h"
#include "jit_cache/tuning_record.h"
#include "kernels/library_dense.h"
#include "models/synth/synth_model.h"
#include "src/tools/tool_main.h"

using namespace kdsl;
namespace kd = kdsl::kernels::detail;

namespace {

struct Options {
  std::string preset = "110m";
  std::vector<std::string> types = {"f32", "f16", "bf16"};
  std::vector<int> rows = {1, 8, 16, 32, 512};
  int rounds = 7, threads = 0;
  double sample_ms = 20;
};

struct Shape {
  std::string name;
  int N, K;
};

// The model's distinct matrix shapes, as the engine multiplies by them.
std::vector<Shape> shapes(const models::ModelHParams &h) {
  const int head_dim = h.n_embd / h.n_head;
  return {{"attention", int(h.n_head * head_dim), int(h.n_embd)},
          {"ffn up", int(h.n_ff), int(h.n_embd)},
          {"ffn down", int(h.n_embd), int(h.n_ff)},
          {"classifier", int(h.n_vocab), int(h.n_embd)}};
}

template <class T>
std::string pick_of(const Device &dev, int rows, const Shape &s, bool tuned) {
  const int64_t nb = tune_bucket(s.N), kb = tune_bucket(s.K);
  std::string kernel, key;
  std::vector<std::string> labels;
  if (rows == 1) {
    kernel = kd::dense_point_name<T>(kd::DensePoint::Decode, false), key = fmt::format("N={},K={}", nb, kb);
    labels = kd::candidate_labels<kd::kDecodeCandidates>();
  } else {
    const bool few = rows <= kd::kMaxFewRowsCpu;
    kernel = kd::dense_point_name<T>(few ? kd::DensePoint::FewRows : kd::DensePoint::Prefill, false);
    key = fmt::format("rows={},N={},K={}", tune_bucket(rows), nb, kb);
    labels = few ? kd::candidate_labels<kd::kFewRowsCandidates>() : kd::candidate_labels<kd::kPrefillCandidates>();  // the CPU's points
  }
  if (!tuned) return labels[0];
  std::string problem;
  auto r = jit_cache::read_tuning_record(jit_cache::tuning_record_path(jit_cache::DiskCache::default_dir(), kernel, key, dev.name()), problem);
  return r ? r->winner : "?";
}

// Microseconds per call: launches back to back for at least sample_ms.
double sample(const std::function<void()> &call, double sample_ms) {
  using Clock = std::chrono::steady_clock;
  int n = 0;
  auto start = Clock::now();
  double ms = 0;
  do {
    call();
    ++n;
    ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  } while (ms < sample_ms);
  return ms * 1000 / n;
}

template <class T>
void bench_type(const Options &o, const Device &dev, const models::ModelHParams &h, std::mt19937 &rng) {
  for (const Shape &s : shapes(h))
    for (int rows : o.rows) {
      if (rows > 1 && s.name == "classifier" && rows > kd::kMaxFewRowsCpu) continue;  // prefill computes the last row's logits only
      std::uniform_real_distribution<float> dist(-1, 1);
      std::vector<float> x(size_t(rows) * size_t(s.K)), out(size_t(rows) * size_t(s.N));
      std::vector<typename T::storage> w(size_t(s.N) * size_t(s.K));
      for (float &v : x) v = dist(rng);
      for (auto &v : w) v = typename T::storage(dist(rng) * 0.05f);
      kernels::Library defaults(dev), tuned(dev);
      // Each Library settles its choice at its first call: the defaults' with tuning off, the
      // tuned one's by timing (or by the record an earlier run left).
      ::setenv("KDSL_AUTOTUNE", "0", 1);
      defaults.matmul(x.data(), w.data(), T::dtype, nullptr, out.data(), rows, s.N, s.K);
      ::setenv("KDSL_AUTOTUNE", "1", 1);
      tuned.matmul(x.data(), w.data(), T::dtype, nullptr, out.data(), rows, s.N, s.K);
      double best_default = 1e30, best_tuned = 1e30;
      for (int r = 0; r < o.rounds; ++r) {
        best_default = std::min(best_default, sample([&] { defaults.matmul(x.data(), w.data(), T::dtype, nullptr, out.data(), rows, s.N, s.K); }, o.sample_ms));
        best_tuned = std::min(best_tuned, sample([&] { tuned.matmul(x.data(), w.data(), T::dtype, nullptr, out.data(), rows, s.N, s.K); }, o.sample_ms));
      }
      fmt::print("| {:<5} | {:<22} | {:>4} | {:<10} | {:>10.1f} | {:<10} | {:>10.1f} | {:>6.2f} |\n", T::text, fmt::format("{} [{} x {}]", s.name, s.N, s.K),
                 rows, pick_of<T>(dev, rows, s, false), best_default, pick_of<T>(dev, rows, s, true), best_tuned, best_default / best_tuned);
      std::fflush(stdout);
    }
}

int run(const Options &o) {
  Device dev = Device::cpu(o.threads);
  models::ModelHParams h = models::synth_preset(o.preset).hparams;
  std::mt19937 rng(1);
  fmt::print("kdsl-bench-tune on {}: synthetic {} shapes, best of {} interleaved rounds of >= {} ms each; tuning records in {}\n\n", dev.name(),
             o.preset, o.rounds, o.sample_ms, jit_cache::DiskCache::default_dir().string());
  fmt::print("| type  | matrix [N x K]         | rows | default    | us/call    | tuned pick | us/call    | ratio  |\n");
  fmt::print("|-------|------------------------|------|------------|------------|------------|------------|--------|\n");
  for (const std::string &t : o.types) {
    if (t == "f32") bench_type<f32>(o, dev, h, rng);
    else if (t == "f16") bench_type<f16>(o, dev, h, rng);
    else if (t == "bf16") bench_type<bf16>(o, dev, h, rng);
    else throw Error(fmt::format("--type {}: the tuned products take f32, f16 or bf16 weights", t));
  }
  TuneStats ts = tune_stats();
  fmt::print("\nautotune: {} shapes timed now, {} read from records; ratio = default time / tuned time (above 1: the pick is faster)\n", ts.timed,
             ts.recorded);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kdsl-bench-tune: the Library's tuned products (decode, few rows, prefill tiles) on a synthetic model's matrix shapes: the "
               "hand-set default against the autotuned pick, timed in interleaved best-of rounds"};
  Options o;
  app.add_option("--preset", o.preset, "synthetic model whose shapes to take (default 110m)");
  app.add_option("--type", o.types, "weight types (default f32 f16 bf16)");
  app.add_option("--rows", o.rows, "rows of x: 1 decode, 2..16 few rows, more prefill (default 1 8 16 32 512)")->check(CLI::Range(1, 4096));
  app.add_option("--rounds", o.rounds, "interleaved rounds, the best kept (default 7)")->check(CLI::Range(1, 1000));
  app.add_option("--sample-ms", o.sample_ms, "each round's calls last at least this long (default 20)")->check(CLI::Range(0.0, 10000.0));
  app.add_option("-t,--threads", o.threads, "CPU threads (0: every CPU)")->check(CLI::NonNegativeNumber);
  if (int status = tools::parse_command_line(app, "kdsl-bench-tune", argc, argv); status >= 0) return status;
  return tools::run_tool("kdsl-bench-tune", "", [&] { return run(o); });
}
