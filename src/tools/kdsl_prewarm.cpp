// kdsl-prewarm: compile every kernel an engine will launch for a model into the kernel cache, for the host and GPU targets, in parallel
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include <kdsl/autotune.h>
#include <kdsl/compile_for.h>
#include <kdsl/kdsl.h>

#include "jit_cache/disk_cache.h"
#include "models/engine/engine_tuning.h"
#include "models/engine/kernel_plan.h"
#include "models/gguf/gguf_types.h"
#include "models/spec/self_draft.h"
#include "runtime/thread_pool.h"
#include "src/tools/tool_main.h"
#include "support/env.h"
#include "src/tools/decode_graph_option.h"
#include "src/tools/kv_cache_type.h"

using namespace kdsl;
using namespace kdsl::models;

namespace {

struct Options {
  std::string model, model_draft, draft_type, cache_dir, targets = "host", batches = "512";
  std::string cache_type_k, cache_type_v, decode_graph = "auto";
  int ctx = 0, jobs = 0, threads = 0, gpu_sms = 0, draft_max = 7, draft_layers = 0, draft_branches = 1;
  bool spec_ngram = false, json = false, list = false, tune = false;
};

// Multiprocessors (AMD: compute units) of the GPU a target's plan assumes unless --gpu-sms
// says: the data-centre part of each architecture (T4, A100, H100 SXM and H200; one MI250X
// die, MI300X) and the RX 7900 XTX.
int default_multiprocessors(const std::string &arch) {
  static const std::map<std::string, int> sms = {{"sm_75", 40}, {"sm_80", 108}, {"sm_90", 132}, {"sm_90a", 132}, {"gfx90a", 110}, {"gfx942", 304}, {"gfx1100", 96}};
  auto it = sms.find(arch);
  return it == sms.end() ? 108 : it->second;
}

std::vector<std::string> split_list(const std::string &text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t end = text.find(',', start);
    std::string item = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!item.empty()) out.push_back(item);
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

std::vector<int> parse_batches(const std::string &text) {
  std::vector<int> out;
  for (const std::string &item : split_list(text)) {
    char *end = nullptr;
    long v = std::strtol(item.c_str(), &end, 10);
    if (*end || v < 1 || v > (1 << 16)) throw Error(fmt::format("--batch {}: '{}' is not a batch size from 1 to 65536", text, item));
    out.push_back(int(v));
  }
  if (out.empty()) throw Error(fmt::format("--batch '{}': expected batch sizes separated by commas (kdsl-run -b values)", text));
  return out;
}

// One kernel of one target's plan, to make sure of in the cache.
struct Job {
  const Target *target;
  const kernels::RecordedKernel *kernel;
  CacheFill result;
  std::string failure;  // kdsl::Error's message when it did not compile
};

// A redrawn bar on a terminal, a line per kernel otherwise.
class Progress {
 public:
  Progress(size_t total) : total_(total), terminal_(::isatty(STDERR_FILENO) == 1) {}

  void done(const Job &job) {
    std::lock_guard lock(mutex_);
    ++finished_;
    std::string what = fmt::format("{} {} [{}]", job.target->name(), job.kernel->signature.name, job.kernel->specialization.str());
    std::string verdict = !job.failure.empty()         ? "FAILED"
                          : job.result.already_cached ? "cached"
                                                      : fmt::format("compiled in {:.0f} ms", job.result.ms);
    if (!terminal_) {
      fmt::print(stderr, "kdsl-prewarm: [{}/{}] {}: {}\n", finished_, total_, what, verdict);
      if (!job.failure.empty()) fmt::print(stderr, "kdsl-prewarm:   {}\n", job.failure);
      return;
    }
    if (!job.failure.empty()) fmt::print(stderr, "\r\033[Kkdsl-prewarm: {} failed: {}\n", what, job.failure);
    constexpr int kBar = 30;
    int filled = int(kBar * finished_ / std::max<size_t>(1, total_));
    std::string line = fmt::format("[{}{}] {}/{} {}", std::string(size_t(filled), '#'), std::string(size_t(kBar - filled), '.'), finished_, total_, what);
    if (line.size() > width() - 1) line.resize(width() - 1);
    fmt::print(stderr, "\r\033[K{}", line);
    if (finished_ == total_) fmt::print(stderr, "\n");
  }

 private:
  static size_t width() {
    struct winsize w = {};
    return ::ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 20 ? w.ws_col : 80;
  }
  std::mutex mutex_;
  size_t total_, finished_ = 0;
  bool terminal_;
};

// Runs every job on `threads` threads; each compile has its own LLVM context and publishes its
// cache entry atomically, so they need nothing shared but the next job's index.
void run_jobs(std::vector<Job> &jobs, int threads) {
  Progress progress(jobs.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      Job &job = jobs[i];
      try {
        job.result = detail::cache_for(job.kernel->signature, *job.target, job.kernel->specialization, job.kernel->options);
      } catch (const Error &e) {
        job.failure = e.what();
      }
      progress.done(job);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread &t : pool) t.join();
}

// The draft model the options name (as kdsl-run makes it), or null.
std::unique_ptr<ModelWeights> draft_weights(const Options &o, const ModelWeights &model) {
  if (!o.draft_type.empty() || o.draft_layers > 0) {
    SelfDraftOptions so;
    so.layers = o.draft_layers;
    if (!o.draft_type.empty()) so.type = parse_self_draft_type("--draft-type", o.draft_type);
    return std::make_unique<ModelWeights>(self_draft_weights(model, so));
  }
  if (!o.model_draft.empty()) {
    tools::report_sigbus_for("kdsl-prewarm", o.model_draft);
    return std::make_unique<ModelWeights>(load_model_weights(o.model_draft));
  }
  return nullptr;
}

int run(const Options &o) {
  if (!o.cache_dir.empty()) setenv("KDSL_CACHE_DIR", o.cache_dir.c_str(), 1);
  const bool self_draft = !o.draft_type.empty() || o.draft_layers > 0;
  if (int(o.spec_ngram) + int(!o.model_draft.empty()) + int(self_draft) > 1)
    throw Error("--spec-ngram, --model-draft (-md) and a self-draft (--draft-type, --draft-layers) are different drafters: choose one");
  const bool speculative = o.spec_ngram || !o.model_draft.empty() || self_draft;
  std::vector<Target> targets;
  for (const std::string &name : split_list(o.targets)) targets.emplace_back(name);  // an unknown name names the known ones
  if (targets.empty()) throw Error(fmt::format("--target '{}': expected targets separated by commas ({})", o.targets, fmt::join(Target::names(), ", ")));
  const bool tunes_host = std::any_of(targets.begin(), targets.end(), [](const Target &t) { return t.is_host(); });
  if (o.tune && !tunes_host)
    throw Error(fmt::format("--tune times kernels on the device they run on, and of the targets only host is tuned (here): add host to --target {}",
                            o.targets));
  if (o.tune && !autotune_enabled()) throw Error("--tune with KDSL_AUTOTUNE=0: tuning is off, every kernel takes its default; unset it to tune");
  if (o.jobs < 0) throw Error(fmt::format("-j {}: expected 0 (every CPU) or more", o.jobs));
  if (o.threads > runtime::available_cpus())
    throw Error(fmt::format("--threads {}: kdsl-run refuses more threads than the {} CPUs this process may run on", o.threads, runtime::available_cpus()));

  auto start = std::chrono::steady_clock::now();
  tools::report_sigbus_for("kdsl-prewarm", o.model);
  ModelWeights model = load_model_weights(o.model);
  std::unique_ptr<ModelWeights> draft = draft_weights(o, model);
  Device cpu = Device::cpu(o.threads);  // the walk's buffers, and the host plan's threads (kdsl-run -t)

  KernelPlanOptions po;
  po.batch_sizes = parse_batches(o.batches);
  po.context = o.ctx;
  po.draft_max = speculative ? o.draft_max : 0;
  po.draft_model = draft.get();
  po.draft_trees = speculative && o.draft_branches > 1;
  po.kv_types = tools::kv_cache_types(o.cache_type_k, o.cache_type_v);
  po.decode_graph = tools::decode_graph_mode(o.decode_graph);
  std::vector<KernelPlan> plans;
  std::vector<Job> jobs;
  for (const Target &target : targets) {
    po.gpu = !target.is_host();
    po.threads = po.gpu ? (o.gpu_sms > 0 ? o.gpu_sms : default_multiprocessors(target.name())) : 0;
    plans.push_back(plan_kernels(model, cpu, po));
  }
  double plan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (size_t t = 0; t < targets.size(); ++t)
    for (kernels::RecordedKernel &k : plans[t].kernels) {
      // A launch under KDSL_CHECK=1 looks up checked host code (GPU code runs unchecked).
      if (targets[t].is_host() && env_checked_mode()) k.options.checked = true;
      jobs.push_back({&targets[t], &k, {}, {}});
    }
  if (o.list) {
    for (size_t t = 0; t < targets.size(); ++t)
      for (const kernels::RecordedKernel &k : plans[t].kernels) fmt::print("{}\t{}\t{}\n", targets[t].name(), k.text(), k.launches);
    return 0;
  }

  const int threads = o.jobs > 0 ? o.jobs : runtime::available_cpus();
  auto compile_start = std::chrono::steady_clock::now();
  run_jobs(jobs, std::min<int>(threads, int(std::max<size_t>(1, jobs.size()))));
  double compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - compile_start).count();

  // With --tune the host plan held every candidate of each tuned kernel not yet recorded (all
  // compiled above); the engine's passes now time them on this CPU and record the winners.
  EngineTuning tuning;
  double tune_s = 0;
  if (o.tune) {
    auto tune_start = std::chrono::steady_clock::now();
    KernelPlanOptions host = po;
    host.gpu = false;
    host.threads = 0;
    tuning = tune_engine(model, cpu, host);
    tune_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - tune_start).count();
  }

  size_t compiled = 0, cached = 0, failed = 0, unstored = 0;
  for (const Job &j : jobs) {
    if (!j.failure.empty()) ++failed;
    else if (j.result.already_cached) ++cached;
    else ++compiled, unstored += !j.result.stored;
  }
  std::string cache = jit_cache::DiskCache::default_dir().string();
  if (o.json) {
    nlohmann::json out = {{"model", o.model},           {"cache_dir", cache},        {"kernels", jobs.size()},  {"compiled", compiled},
                          {"already_cached", cached},   {"failed", failed},          {"not_stored", unstored},  {"plan_seconds", plan_s},
                          {"compile_seconds", compile_s}, {"seconds", plan_s + compile_s + tune_s}, {"jobs", threads}};
    if (o.tune)
      out["tuning"] = {{"passes", tuning.passes}, {"timed", tuning.stats.timed}, {"recorded", tuning.stats.recorded + tuning.stats.remembered},
                       {"rejected", tuning.stats.rejected}, {"seconds", tune_s}};
    for (size_t t = 0; t < targets.size(); ++t)
      out["targets"].push_back({{"target", targets[t].name()}, {"kernels", plans[t].kernels.size()}, {"context", plans[t].context},
                                {"steps", plans[t].steps}, {"launches", plans[t].launches}});
    for (const Job &j : jobs)
      if (!j.failure.empty()) out["failures"].push_back({{"target", j.target->name()}, {"kernel", j.kernel->text()}, {"error", j.failure}});
    fmt::print("{}\n", out.dump(2));
  } else {
    for (size_t t = 0; t < targets.size(); ++t)
      fmt::print(stderr, "kdsl-prewarm: {}: {} kernels, from {} steps of the engine over a context of {}\n", targets[t].name(), plans[t].kernels.size(),
                 plans[t].steps, plans[t].context);
    fmt::print(stderr, "kdsl-prewarm: {} kernels: {} compiled, {} already cached, {} failed in {:.1f} s ({:.1f} s planning, -j {}); cache {}\n",
               jobs.size(), compiled, cached, failed, plan_s + compile_s, plan_s, threads, cache);
    if (o.tune)
      fmt::print(stderr, "kdsl-prewarm: tuned on {}: {} kernel shapes timed, {} already recorded ({} forward passes, {:.1f} s)\n", cpu.name(),
                 tuning.stats.timed, tuning.stats.recorded + tuning.stats.remembered, tuning.passes, tune_s);
  }
  if (unstored)
    throw Error(fmt::format("{} compiled kernels could not be stored in the cache {} (see the warnings above): later runs will compile them again",
                            unstored, cache));
  if (failed) throw Error(fmt::format("{} of {} kernels failed to compile (listed above)", failed, jobs.size()));
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kdsl-prewarm: compile every kernel kdsl-run will launch for a model into the kernel cache, for the host and GPU targets, "
               "with no GPU needed; kdsl-run then compiles nothing"};
  Options o;
  app.add_option("-m,--model", o.model, "model file: GGUF, or a llama2.c checkpoint")->required();
  app.add_option("--target", o.targets, "targets, comma-separated: host, sm_75, sm_80, sm_89 (Ada: fp8), sm_90 (Hopper and newer, through PTX), sm_90a (H100/H200, with wgmma), gfx90a, gfx942, gfx1100 (default host)");
  app.add_option("-b,--batch,--batch-size", o.batches, "kdsl-run -b values (prompt tokens per prefill pass), comma-separated (default 512)");
  app.add_option("-c,--ctx,--ctx-size", o.ctx, "context length the plan covers (default: the model's)")->check(CLI::NonNegativeNumber);
  app.add_flag("--spec-ngram", o.spec_ngram, "as kdsl-run --spec-ngram: the target's speculative checks");
  app.add_option("--model-draft", o.model_draft, "as kdsl-run --model-draft: checks and this draft model's kernels");
  app.add_option("--draft-type", o.draft_type, "as kdsl-run --draft-type (q8_0 or q4_0): checks and the self-draft's kernels");
  app.add_option("--draft-layers", o.draft_layers, "as kdsl-run --draft-layers")->check(CLI::Range(1, 1 << 16));
  app.add_option("--draft-max", o.draft_max, "as kdsl-run --draft-max (default 7)")->check(CLI::Range(1, 64));
  app.add_option("--draft-branches", o.draft_branches, "as kdsl-run --draft-branches: token trees' kernels too")->check(CLI::Range(1, 8));
  app.add_option("--cache-type-k", o.cache_type_k, "the KV cache's element type: f32 (default), f16, bf16 or q8_0 (blocks of 32 along head_dim, which must be a multiple of 32), for keys and values (-ctk; alone it sets both)");
  tools::add_decode_graph_option(app, o.decode_graph);
  app.add_option("--cache-type-v", o.cache_type_v, "as --cache-type-k (-ctv; alone it sets both; the two must agree)");
  app.add_option("-t,--threads", o.threads, "as kdsl-run -t: the CPU threads the host plan is for (0: every CPU)")->check(CLI::NonNegativeNumber);
  app.add_option("--gpu-sms", o.gpu_sms, "multiprocessors (AMD: compute units) of the GPU the GPU targets' plans are for (default: sm_75 40, sm_80 108, sm_90 132, sm_90a 132, gfx90a 110, gfx942 304, gfx1100 96)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--cache-dir", o.cache_dir, "kernel cache folder (default $KDSL_CACHE_DIR or ~/.cache/kdsl)");
  app.add_option("-j,--jobs", o.jobs, "compile threads (default: every CPU)");
  app.add_flag("--json", o.json, "print the summary as JSON on stdout");
  app.add_flag("--tune", o.tune,
               "time the tuned kernels' candidates on this CPU for the host plan's shapes and record the winners in the cache (kdsl-run "
               "then times nothing); the plan compiles every candidate not yet recorded");
  app.add_flag("--list", o.list, "print the plan (target, kernel [specialization] options, launches walked) and compile nothing");
  return tools::run_tool("kdsl-prewarm", "", [&] {
    // kdsl-run's (llama.cpp's) single-dash spelling of the draft model, which CLI11 would read as -m d.
    std::vector<std::string> args(argv + 1, argv + argc);
    for (std::string &a : args)
      if (a == "-md") a = "--model-draft";
    if (int status = tools::parse_command_line(app, "kdsl-prewarm", args); status >= 0) return status;
    return tools::run_tool("kdsl-prewarm", o.model, [&] { return run(o); });
  });
}
