// kdsl_bench_engine.cpp - kdsl-bench-engine: decode and prompt-processing speed of the kdsl engine,
// against the memory bandwidth measured in the same run
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <optional>
#include <vector>

#include <kdsl/kdsl.h>

#include "kernels/library.h"
#include "models/engine/engine.h"
#include "models/engine/generator.h"
#include "models/gguf/gguf_file.h"
#include "models/gguf/quantize.h"
#include "models/spec/model_drafter.h"
#include "models/spec/ngram_drafter.h"
#include "models/synth/synth_model.h"
#include "runtime/device_bandwidth.h"
#include "src/tools/decode_graph_option.h"
#include "src/tools/kv_cache_type.h"
#include "src/tools/llama_bench_reference.h"
#include "src/tools/median.h"

using namespace kdsl;
using namespace kdsl::models;
using Clock = std::chrono::steady_clock;

namespace {

using tools::median;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct Row {
  std::string model;
  double decode_tps = 0;    // batch 1, after warm-up: 1 / the median step time
  double decode_mean_tps = 0;  // the same over the total time of the steps
  int64_t bytes_per_token = 0;     // the weights, read once a token
  int64_t kv_bytes_per_token = 0;  // the KV cache the middle timed step reads: every layer's keys and values of its context
  double achieved_gbs = 0;         // (weights + KV cache) bytes per token x decode tokens/s
  std::vector<double> streams_gbs;         // the memory bandwidth measured before each round of timed steps and after the last
  std::vector<double> round_ceilings_gbs;  // each round's ceiling: the better measurement next to it
  std::vector<double> round_fractions;     // each round's achieved bandwidth over its ceiling
  double ceiling_gbs() const { return median(round_ceilings_gbs); }
  double fraction() const { return median(round_fractions); }
  double prompt_tps = 0;    // one batched prefill of the prompt
  double warmup_ms = 0;     // first prefill and first decode steps (compiles or cache loads)
  tools::LlamaBenchFigures llama;  // llama-bench on the same file and threads, with --llama-bench
};

int argmax(std::span<const float> x) { return int(std::max_element(x.begin(), x.end()) - x.begin()); }

// A fixed, vocabulary-wide spread of prompt ids (no specials: ids from 3).
std::vector<int> prompt_ids(int n, int vocab) {
  std::vector<int> ids(static_cast<size_t>(n));
  ids[0] = 1;
  for (int i = 1; i < n; ++i) ids[size_t(i)] = 3 + int((uint64_t(i) * 2654435761u) % uint64_t(std::max(1, vocab - 3)));
  return ids;
}

// What bench_model runs and how the engine is set up for it.
// The bandwidth streams' buffers: well past the last-level cache of the machines we run on
// (the development VM's L3 is 260 MiB; a smaller buffer would measure the cache).
constexpr size_t kBandwidthBytes = size_t(1) << 30;

struct BenchShape {
  int decode_tokens = 32, warmup_tokens = 4, prompt_tokens = 512, prompt_repeats = 1;
  int decode_rounds = 4;  // rounds of timed decode steps, the read stream measured between them
  int integer_dot_rows = -1;
  bool row_groups = true;
  bool fuse_steps = true;
  kernels::KvTypes kv_types;
  DecodeGraph decode_graph = DecodeGraph::Auto;
};

Row bench_model(const std::string &path, const std::string &label, const Device &dev, const BenchShape &shape) {
  const int decode_tokens = shape.decode_tokens, warmup_tokens = shape.warmup_tokens, prompt_tokens = shape.prompt_tokens;
  Row row;
  row.model = label;
  ModelWeights model = load_model_weights(path);
  row.bytes_per_token = model.bytes_per_token();
  EngineOptions eo;
  eo.context = std::max(prompt_tokens, 1 + warmup_tokens + decode_tokens) + 16;
  eo.integer_dot_rows = shape.integer_dot_rows;
  eo.row_groups = shape.row_groups;
  eo.fuse_steps = shape.fuse_steps;
  eo.kv_types = shape.kv_types;
  eo.decode_graph = shape.decode_graph;
  Engine engine(model, dev, eo);
  int vocab = int(model.hparams.n_vocab);

  // Decode at batch 1 from a short context (BOS), greedy: warm-up steps first, so every
  // kernel is compiled (or loaded from the disk cache) before the clock runs.
  auto t = Clock::now();
  int token[1] = {1};
  std::span<const float> logits = engine.forward(token, 0);
  int pos = 1;
  for (int i = 0; i < warmup_tokens; ++i) {
    token[0] = argmax(logits);
    logits = engine.forward(token, pos++);
  }
  row.warmup_ms += ms_since(t);
  // The ceiling decode is judged by, measured between its steps. A VM's read stream moved by a
  // quarter between the measurements just before and just after one model's decode
  // (bench/RESULTS.md, 2026-12-07, "decode judged round by round"), so the steps run in rounds
  // with a measurement before each round and after the last, each round is judged by the
  // better of the two around it, and the fraction is the median round's.
  const int rounds = std::min(shape.decode_rounds, decode_tokens);
  const int64_t kv_per_position = models::kv_cache_bytes_per_position(model.hparams, shape.kv_types);
  auto kv_bytes_at = [&](int context) { return int64_t(context) * kv_per_position; };
  row.streams_gbs.push_back(runtime::measure_device_bandwidth(dev, kBandwidthBytes, 2).gbs);
  // Each step timed alone; the median step sets the rate, so a burst of other work on a
  // shared machine does not decide the figure (the copy bandwidth is a best-of too).
  std::vector<double> steps;
  const int first_pos = pos;
  for (int round = 0; round < rounds; ++round) {
    const int begin = decode_tokens * round / rounds, end = decode_tokens * (round + 1) / rounds;
    std::vector<double> round_steps;
    for (int i = begin; i < end; ++i) {
      t = Clock::now();
      token[0] = argmax(logits);
      logits = engine.forward(token, pos++);
      round_steps.push_back(ms_since(t));
    }
    row.streams_gbs.push_back(runtime::measure_device_bandwidth(dev, kBandwidthBytes, 2).gbs);
    // A step at context c reads c positions of keys and values besides the weights: the
    // round's middle step's context counts (left out, the fraction would fall as it grows).
    const double gbs = double(row.bytes_per_token + kv_bytes_at(first_pos + begin + (end - begin + 1) / 2)) / median(round_steps) / 1e6;
    const double ceiling = std::max(row.streams_gbs[size_t(round)], row.streams_gbs[size_t(round) + 1]);
    row.round_ceilings_gbs.push_back(ceiling);
    row.round_fractions.push_back(gbs / ceiling);
    steps.insert(steps.end(), round_steps.begin(), round_steps.end());
  }
  row.decode_tps = 1e3 / median(steps);
  row.decode_mean_tps = decode_tokens / (std::accumulate(steps.begin(), steps.end(), 0.0) / 1e3);
  row.kv_bytes_per_token = kv_bytes_at(first_pos + (decode_tokens + 1) / 2);  // the middle step's
  row.achieved_gbs = double(row.bytes_per_token + row.kv_bytes_per_token) * row.decode_tps / 1e9;

  // Prompt processing: the whole prompt in one forward call from position 0 (the engine cuts
  // it into chunks of its max batch). The first call is the warm-up; the best of the rest counts.
  if (prompt_tokens > 0) {
    std::vector<int> ids = prompt_ids(prompt_tokens, vocab);
    t = Clock::now();
    engine.forward(ids, 0);
    row.warmup_ms += ms_since(t);
    double best = 0;
    for (int r = 0; r < shape.prompt_repeats; ++r) {
      t = Clock::now();
      engine.forward(ids, 0);
      double ms = ms_since(t);
      best = r == 0 ? ms : std::min(best, ms);
    }
    row.prompt_tps = prompt_tokens / (best / 1e3);
  }
  return row;
}

// One decode matrix-vector product, [N x K] weights of `type` times a vector, timed alone:
// the engine's hot loop without the rest of the layer. Weights are uniform in [-1, 1] (never
// subnormal: those would time the CPU's slow path, not the kernel), in enough copies to fill
// kBandwidthBytes, and the calls cycle through them, so each call reads its weights from memory
// as decode does rather than from the last-level cache. The median call sets the rate.
struct MatvecRow {
  std::string label;
  int64_t bytes = 0;
  double us = 0, gbs = 0;
  double cached_us = 0, cached_gbs = 0;  // one copy over and over, from the caches: the kernel's own rate, whatever memory gives
};

MatvecRow bench_matvec(kernels::Library &lib, GgmlType type, kernels::WeightType wtype, int N, int K, const std::string &what) {
  const size_t n = size_t(N) * size_t(K), bytes = size_t(kernels::weight_bytes(wtype, int64_t(n)));
  const size_t copies = std::max<size_t>(1, kBandwidthBytes / bytes);
  std::vector<uint8_t> w(copies * bytes);
  {
    std::vector<float> values(n);
    uint32_t state = 12345;
    for (float &v : values) v = float(int32_t(state = state * 1664525u + 1013904223u)) * 0x1p-31f;
    quantize_row(type, values.data(), w.data(), int64_t(n));
  }
  // Each copy differs in one low-order byte per 4 KiB page (a mantissa or quant byte: any value
  // is a valid weight), so no page of one copy is a duplicate of another's that memory
  // deduplication could merge into one cached physical page.
  for (size_t c = 1; c < copies; ++c) {
    uint8_t *copy = w.data() + c * bytes;
    std::memcpy(copy, w.data(), bytes);
    for (size_t at = 0; at < bytes; at += 4096) copy[at] = uint8_t(copy[at] ^ uint8_t(c));
  }
  // Laid out as decode reads it: rows grouped where the Library groups this type (the engine
  // copies such matrices so at load), as stored otherwise.
  const int row_group = lib.row_group(wtype, N);
  if (row_group > 1) {
    std::vector<uint8_t> grouped(bytes);
    for (size_t c = 0; c < copies; ++c) {
      lib.group_rows(w.data() + c * bytes, wtype, N, K, grouped.data());
      std::memcpy(w.data() + c * bytes, grouped.data(), bytes);
    }
  }
  std::vector<float> x(size_t(K), 0.5f);
  std::vector<float> out(static_cast<size_t>(N));
  auto product = [&](size_t copy) { lib.matmul(x.data(), w.data() + copy * bytes, wtype, nullptr, out.data(), 1, N, K, row_group); };
  product(0);  // compile or load first
  // The median call's microseconds, `copy(call)` choosing the weights of each.
  auto median_us = [&](auto copy) {
    std::vector<double> times;
    auto start = Clock::now();
    for (size_t call = 1; times.size() < 5 || (ms_since(start) < 250 && times.size() < 2000); ++call) {
      auto t = Clock::now();
      product(copy(call));
      times.push_back(ms_since(t) * 1e3);
    }
    return median(times);
  };
  MatvecRow r;
  r.label = fmt::format("{} {} [{} x {}]{}", kernels::weight_type_info(wtype).name, what, N, K, row_group > 1 ? fmt::format(" /{}", row_group) : "");
  r.bytes = int64_t(bytes);
  r.us = median_us([&](size_t call) { return call % copies; });
  r.gbs = double(r.bytes) / (r.us * 1e3);
  // The same weights every call stay in the caches (L2 for the small products, the last level
  // for the classifier): a rate far above the read stream says the kernel waits on memory, one
  // near it says the kernel's own instructions are what it would take to go faster.
  r.cached_us = median_us([](size_t) { return size_t(0); });
  r.cached_gbs = double(r.bytes) / (r.cached_us * 1e3);
  return r;
}

// Speculative decoding against plain decoding of the same target in the same run, greedy: one
// row per drafter and prompt. Plain and speculative runs alternate `repeats` times and the best
// of each counts (the machine may be shared); generation's compile time is left out.
struct SpecRow {
  std::string target, drafter, prompt;
  double plain_tps = 0, spec_tps = 0;
  int64_t drafted = 0, accepted = 0, checks = 0;
};

// "repetitive": a list of 12 ids said 10 times (n-gram lookup's case: code, lists, quotes);
// "variants": the same list with its 5th and 9th ids changed in every other repetition (lines
// alike but not equal: where a tree of several matches can beat one chain);
// "spread": ids spread over the vocabulary, nothing repeated.
std::vector<int> spec_prompt(const std::string &kind, int vocab) {
  if (kind == "spread") return prompt_ids(120, vocab);
  std::vector<int> ids = {1};
  for (int rep = 0; rep < 10; ++rep)
    for (int i = 0; i < 12; ++i) {
      int id = (i * 131 + 7) % std::max(1, vocab - 3);
      if (kind == "variants" && rep % 2 == 1 && (i == 4 || i == 8)) id = (id + 17) % std::max(1, vocab - 3);
      ids.push_back(3 + id);
    }
  return ids;
}

std::vector<SpecRow> bench_spec(const std::string &target_path, const std::string &target_label, const std::vector<std::pair<std::string, std::string>> &drafts,
                                const Device &dev, int tokens, int draft_max, int branches, bool adaptive, int repeats) {
  ModelWeights target = load_model_weights(target_path);
  std::unique_ptr<Tokenizer> tok = load_tokenizer(GgufFile(target_path));
  int vocab = int(target.hparams.n_vocab);
  EngineOptions eo;
  eo.context = 160 + tokens + draft_max + 1;
  eo.max_logit_rows = draft_max + 1;
  Engine engine(target, dev, eo);
  SamplerParams greedy{.temperature = 0};
  auto tps = [&](const std::vector<int> &prompt, Drafter *drafter, GenerationResult *out) {
    Sampler sampler(greedy);
    GenerateOptions o;
    o.max_tokens = tokens, o.ignore_eos = true, o.drafter = drafter, o.spec.draft_max = draft_max, o.spec.adaptive = adaptive;
    GenerationResult r = generate(engine, *tok, sampler, prompt, o);
    if (out) *out = r;
    return double(r.generated_ids.size() - 1) / (std::max(r.generation_ms - r.generation_compile_ms, 1e-3) / 1e3);
  };
  std::vector<std::unique_ptr<ModelWeights>> draft_weights;
  struct Row {
    std::unique_ptr<Drafter> drafter;
    std::string label, prompt;
  };
  std::vector<Row> drafters;
  for (const char *kind : {"repetitive", "variants"}) {
    for (int b : {1, branches}) {  // a chain, and a tree of up to `branches` continuations
      auto ngram = std::make_unique<NgramDrafter>(1, 4, b);
      std::string name = ngram->name();
      drafters.push_back({std::move(ngram), name, kind});
    }
  }
  for (auto &[path, label] : drafts) {
    draft_weights.push_back(std::make_unique<ModelWeights>(load_model_weights(path)));
    EngineOptions de;
    de.context = eo.context;
    drafters.push_back({std::make_unique<ModelDrafter>(*draft_weights.back(), vocab, dev, de, greedy, ModelDrafterOptions{}), label, "spread"});
    // The same draft's tree, checked at the same --draft-max nodes: the chain's cost or less.
    drafters.push_back(
        {std::make_unique<ModelDrafter>(*draft_weights.back(), vocab, dev, de, greedy, ModelDrafterOptions{.branches = branches}), label + " tree", "spread"});
  }
  std::vector<SpecRow> rows;
  for (size_t d = 0; d < drafters.size(); ++d) {
    SpecRow row;
    row.target = target_label;
    row.drafter = drafters[d].label;
    row.prompt = drafters[d].prompt;
    std::vector<int> prompt = spec_prompt(row.prompt, vocab);
    Drafter *drafter = drafters[d].drafter.get();
    tps(prompt, drafter, nullptr);  // warm-up: every row count's kernels compiled or loaded
    for (int r = 0; r < repeats; ++r) {
      row.plain_tps = std::max(row.plain_tps, tps(prompt, nullptr, nullptr));
      GenerationResult g;
      double s = tps(prompt, drafter, &g);
      if (s > row.spec_tps) row.spec_tps = s, row.drafted = g.spec_drafted, row.accepted = g.spec_accepted, row.checks = g.spec_checks;
    }
    rows.push_back(row);
  }
  return rows;
}

// The kernels' name of a type the engine runs (--type admits no other).
std::string type_name(GgmlType t) { return std::string(kernels::weight_type_info(t).name); }

// The spellings --type and --draft-type take: the types the engine runs.
std::string kernel_type_names() {
  return formats::weight_type_names([](const formats::WeightTypeInfo &t) { return t.runs_in_kernels(); });
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kdsl-bench-engine: decode and prompt tokens/s of the kdsl engine, and decode's weight bandwidth against this machine's"};
  std::vector<std::string> models;
  std::vector<std::string> types = {"f32", "f16"};
  std::string preset = "110m", dir, device_name = "cpu";
  int threads = 0;
  BenchShape shape;
  std::string cache_type_k, cache_type_v, decode_graph = "auto";
  bool quick = false, keep = false, no_kernels = false, spec = false, spec_fixed = false, llama_shapes = false, no_row_groups = false, no_step_fusion = false;
  std::string llama_bench;
  std::vector<std::string> draft_types = {"q4_0", "q8_0"};
  int spec_tokens = 64, draft_max = 7, draft_branches = 3, spec_repeats = 2;
  app.add_option("-m,--model", models, "model files to measure (GGUF or llama2.c); default: synthetic models of --preset in each --type");
  app.add_option("--preset", preset, "synthetic model preset (tiny, 110m, qwen3-tiny)");
  app.add_option("--type", types, "synthetic weight types: " + kernel_type_names() + " (k-quants need a preset whose sizes are multiples of 256: 110m, llama3-8b)")->delimiter(',');
  app.add_option("--dir", dir, "folder for the synthetic models (default: a fresh temporary folder, removed afterwards)");
  app.add_flag("--keep", keep, "keep the synthetic models");
  app.add_option("--threads", threads, "CPU threads (0: all)");
  app.add_option("--device", device_name, "cpu or cuda (GPU 0)")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--decode", shape.decode_tokens, "decode steps timed at batch 1")->check(CLI::PositiveNumber);
  app.add_option("--warmup", shape.warmup_tokens, "decode steps before timing")->check(CLI::NonNegativeNumber);
  app.add_option("--decode-rounds", shape.decode_rounds,
                 "rounds the timed decode steps run in, the read stream measured before each and after the last; a round is judged by the better "
                 "measurement next to it, and decode's fraction of the stream is the median round's")
      ->check(CLI::PositiveNumber);
  app.add_option("--prompt", shape.prompt_tokens, "prompt tokens for prompt processing (0: skip)")->check(CLI::NonNegativeNumber);
  app.add_option("--prompt-repeats", shape.prompt_repeats, "timed prefills after the warm-up one (the best counts)")->check(CLI::PositiveNumber);
  app.add_option("--int-dot-rows", shape.integer_dot_rows, "the most rows a quantized product on the CPU takes through integer dot products (-1: the library's default, 0: none: the f32 dequantize path everywhere, to compare the two)");
  app.add_flag("--no-step-fusion", no_step_fusion,
               "give the norms, residual adds and SwiGLU of decode and of a quantized prefill launches of their own on the CPU (they are otherwise made in the activation quantizer of the product after them: Library::matmul_normed), to compare the two");
  app.add_flag("--no-row-groups", no_row_groups, "leave every matrix as stored on the CPU (the integer-dot formats are otherwise grouped by 16 or 8 rows at load: Library::row_group), to compare the two");
  app.add_option("--cache-type-k", cache_type_k,
                 "the KV cache's element type: f16 (the default, as llama-bench's), f32, bf16 or q8_0; with --llama-bench, llama-bench reads the same type");
  app.add_option("--cache-type-v", cache_type_v, "as --cache-type-k (alone it sets both; the two must agree)");
  tools::add_decode_graph_option(app, decode_graph);
  app.add_flag("--no-kernels", no_kernels, "skip the table of single matrix-vector products at the preset's shapes");
  app.add_flag("--spec", spec, "also speculative decoding against plain decoding, greedy, in the same run: n-gram lookup on a repetitive prompt, "
                               "and each synthetic target drafted by its own weights in --draft-type");
  app.add_option("--draft-type", draft_types, "with --spec: the types of the target's copies that draft for it")->delimiter(',');
  app.add_option("--spec-tokens", spec_tokens, "with --spec: tokens generated per run")->check(CLI::Range(2, 4096));
  app.add_option("--draft-max", draft_max, "with --spec: at most this many drafts per check")->check(CLI::Range(1, 64));
  app.add_option("--draft-branches", draft_branches, "with --spec: the trees' branching (n-gram continuations; a draft model's likeliest tokens a position)")
      ->check(CLI::Range(2, 8));
  app.add_flag("--spec-fixed", spec_fixed, "with --spec: always draft --draft-max tokens (no adaptive length)");
  app.add_option("--spec-repeats", spec_repeats, "with --spec: plain and speculative runs alternated, the best of each counts")->check(CLI::PositiveNumber);
  app.add_option("--llama-bench", llama_bench,
                 "a llama-bench binary: run it on each model with the same threads and shapes, and print its figures and kdsl's ratio to them")
      ->check(CLI::ExistingFile);
  app.add_flag("--llama-shapes", llama_shapes, "llama-bench's default shapes: tg128 (--decode 128) and pp512 (--prompt 512)");
  app.add_flag("--quick", quick, "tiny preset, 8 decode steps, a 64-token prompt (a smoke run)");
  CLI11_PARSE(app, argc, argv);
  if (quick) preset = "tiny", shape.decode_tokens = 8, shape.prompt_tokens = 64;
  if (llama_shapes) shape.decode_tokens = 128, shape.prompt_tokens = 512;
  shape.row_groups = !no_row_groups;
  shape.fuse_steps = !no_step_fusion;
  shape.decode_graph = tools::decode_graph_mode(decode_graph);

  std::filesystem::path tmp;
  bool remove_tmp = models.empty() && dir.empty() && !keep;
  try {
    // f16 unless told: llama-bench's default, so that both read the same cache.
    shape.kv_types = tools::kv_cache_types(cache_type_k, cache_type_v, "f16");
    Device dev = device_name == "cuda" ? Device::cuda(0) : Device::cpu(threads);
    std::vector<std::pair<std::string, std::string>> runs;  // path, label
    std::vector<GgmlType> synthetic_types;
    for (const std::string &name : types) {
      // The types the engine runs (parse_ggml_type also knows ones it refuses, such as q5_k).
      std::optional<GgmlType> parsed = parse_ggml_type(name);
      if (!parsed || !kernel_weight_type(*parsed)) throw Error(fmt::format("--type '{}': expected one of {}", name, kernel_type_names()));
      synthetic_types.push_back(*parsed);
    }
    if (models.empty()) {
      tmp = dir.empty() ? std::filesystem::temp_directory_path() / fmt::format("kdsl-bench-engine-{}", getpid()) : std::filesystem::path(dir);
      std::filesystem::create_directories(tmp);
      for (GgmlType type : synthetic_types) {
        SynthConfig c = synth_preset(preset);
        c.weight_type = c.embedding_type = type;
        std::string path = (tmp / fmt::format("synth-{}-{}.gguf", preset, type_name(type))).string();
        auto t = Clock::now();
        if (!std::filesystem::exists(path)) write_synthetic_model(c, path);
        fmt::print(stderr, "model {} ({:.0f} MB) ready in {:.1f} s\n", path, std::filesystem::file_size(path) / 1e6, ms_since(t) / 1e3);
        runs.emplace_back(path, fmt::format("synthetic {} {}", preset, type_name(type)));
      }
    } else {
      for (const std::string &m : models) runs.emplace_back(m, std::filesystem::path(m).filename().string());
    }

    fmt::print(stderr, "measuring the memory bandwidth of {}...\n", dev.name());
    runtime::MeasuredBandwidth ceiling = runtime::measure_device_bandwidth(dev, kBandwidthBytes, 5);
    const double first_gbs = ceiling.gbs;
    std::vector<Row> rows;
    for (auto &[path, label] : runs) {
      fmt::print(stderr, "measuring {}...\n", label);
      rows.push_back(bench_model(path, label, dev, shape));
      if (!llama_bench.empty()) {
        // Run after kdsl's own figures, never alongside them: the two share the machine.
        fmt::print(stderr, "measuring {} with llama-bench...\n", label);
        rows.back().llama = tools::run_llama_bench(llama_bench, path, dev.threads(), dev.kind() == Device::Kind::Cpu ? 0 : 99,
                                                   std::string(kernels::weight_type_info(shape.kv_types.k).name), shape.prompt_tokens,
                                                   shape.decode_tokens, std::max(shape.prompt_repeats, 2));
      }
    }
    std::vector<SpecRow> spec_rows;
    if (spec) {
      std::vector<GgmlType> drafts;
      for (const std::string &name : draft_types) {
        std::optional<GgmlType> parsed = parse_ggml_type(name);
        if (!parsed || !kernel_weight_type(*parsed)) throw Error(fmt::format("--draft-type '{}': expected one of {}", name, kernel_type_names()));
        drafts.push_back(*parsed);
      }
      for (size_t i = 0; i < runs.size(); ++i) {
        std::vector<std::pair<std::string, std::string>> draft_files;
        if (models.empty())
          for (GgmlType type : drafts) {
            SynthConfig c = synth_preset(preset);  // the target's seed: its own weights, in another type
            c.weight_type = c.embedding_type = type;
            std::string path = (tmp / fmt::format("synth-{}-{}.gguf", preset, type_name(type))).string();
            if (!std::filesystem::exists(path)) write_synthetic_model(c, path);
            draft_files.emplace_back(path, fmt::format("{} copy", type_name(type)));
          }
        fmt::print(stderr, "measuring speculative decoding on {}...\n", runs[i].second);
        for (SpecRow &r : bench_spec(runs[i].first, runs[i].second, draft_files, dev, spec_tokens, draft_max, draft_branches, !spec_fixed, spec_repeats)) spec_rows.push_back(r);
      }
    }
    std::vector<MatvecRow> matvecs;
    if (!no_kernels && models.empty() && dev.kind() == Device::Kind::Cpu) {
      const ModelHParams h = synth_preset(preset).hparams;
      const int dim = int(h.n_embd), ff = int(h.n_ff), vocab = int(h.n_vocab);
      kernels::Library lib(dev);
      if (shape.integer_dot_rows >= 0) lib.set_integer_dot_rows(shape.integer_dot_rows);
      for (GgmlType g : synthetic_types) {
        const kernels::WeightType t = *kernel_weight_type(g);
        fmt::print(stderr, "measuring {} matrix-vector products...\n", type_name(g));
        matvecs.push_back(bench_matvec(lib, g, t, dim, dim, "attention"));
        matvecs.push_back(bench_matvec(lib, g, t, ff, dim, "ffn up"));
        matvecs.push_back(bench_matvec(lib, g, t, dim, ff, "ffn down"));
        matvecs.push_back(bench_matvec(lib, g, t, vocab, dim, "classifier"));
      }
    }
    // Measured again after the models, and the larger of the two taken: the ceiling is the best this machine did.
    const double last_gbs = runtime::measure_device_bandwidth(dev, kBandwidthBytes, 5).gbs;
    ceiling.gbs = std::max(first_gbs, last_gbs);
    const double read_gbs = ceiling.gbs;

    fmt::print("kdsl-bench-engine on {}: decode at batch 1 (median of {} steps after {} warm-up), prompt of {} tokens (best of {}), {} KV cache\n\n",
               dev.name(), shape.decode_tokens, shape.warmup_tokens, shape.prompt_tokens, shape.prompt_repeats, kernels::weight_type_info(shape.kv_types.k).name);
    fmt::print("| {:<24} | {:>14} | {:>15} | {:>12} | {:>13} | {:>17} | {:>11} | {:>19} |\n", "model", "decode tok/s", "weights/token", "KV/token",
               "achieved", "bandwidth", "fraction", fmt::format("prompt tok/s ({})", shape.prompt_tokens));
    fmt::print("|{:-<26}|{:->16}|{:->17}|{:->14}|{:->15}|{:->19}|{:->13}|{:->21}|\n", "", "", "", "", "", "", "", "");
    for (const Row &r : rows)
      fmt::print("| {:<24} | {:>14.2f} | {:>12.1f} MB | {:>9.2f} MB | {:>8.2f} GB/s | {:>12.2f} GB/s | {:>10.0f}% | {:>19} |\n", r.model,
                 r.decode_tps, r.bytes_per_token / 1e6, r.kv_bytes_per_token / 1e6, r.achieved_gbs, r.ceiling_gbs(),
                 100 * r.fraction(), shape.prompt_tokens > 0 ? fmt::format("{:.1f}", r.prompt_tps) : "-");
    if (!llama_bench.empty()) {
      // kdsl's decode here is over the whole timed run, as llama-bench's tg is; both prompt
      // figures are the best of their repeats.
      fmt::print("\nagainst llama-bench ({}), same files and {} threads: tg{} and pp{}, the best of its runs; kdsl/llama.cpp is the ratio\n\n",
                 llama_bench, dev.threads(), shape.decode_tokens, shape.prompt_tokens);
      fmt::print("| {:<24} | {:>12} | {:>13} | {:>10} | {:>12} | {:>13} | {:>10} |\n", "model", "kdsl decode", "llama.cpp tg", "kdsl/llama", "kdsl prompt",
                 "llama.cpp pp", "kdsl/llama");
      fmt::print("|{:-<26}|{:->14}|{:->15}|{:->12}|{:->14}|{:->15}|{:->12}|\n", "", "", "", "", "", "", "");
      auto ratio = [](double kdsl, double llama) { return llama > 0 && kdsl > 0 ? fmt::format("{:.2f}x", kdsl / llama) : std::string("-"); };
      auto rate = [](double tps) { return tps > 0 ? fmt::format("{:.2f}", tps) : std::string("-"); };
      for (const Row &r : rows)
        fmt::print("| {:<24} | {:>12} | {:>13} | {:>10} | {:>12} | {:>13} | {:>10} |\n", r.model, rate(r.decode_mean_tps), rate(r.llama.decode_tps),
                   ratio(r.decode_mean_tps, r.llama.decode_tps), rate(r.prompt_tps), rate(r.llama.prompt_tps), ratio(r.prompt_tps, r.llama.prompt_tps));
    }
    if (!matvecs.empty()) {
      fmt::print("\nsingle matrix-vector products (median call; \"/R\": rows grouped by R, as decode reads them; \"from cache\": one copy of the "
                 "weights over and over, the kernel's own rate):\n\n");
      fmt::print("| {:<32} | {:>10} | {:>10} | {:>13} | {:>17} | {:>9} | {:>15} | {:>17} |\n", "weights", "bytes", "time", "achieved", "bandwidth",
                 "fraction", "from cache", "from cache rate");
      fmt::print("|{:-<34}|{:->12}|{:->12}|{:->15}|{:->19}|{:->11}|{:->17}|{:->19}|\n", "", "", "", "", "", "", "", "");
      for (const MatvecRow &m : matvecs)
        fmt::print("| {:<32} | {:>7.2f} MB | {:>7.1f} us | {:>8.2f} GB/s | {:>12.2f} GB/s | {:>8.0f}% | {:>12.1f} us | {:>12.2f} GB/s |\n", m.label,
                   m.bytes / 1e6, m.us, m.gbs, read_gbs, 100 * m.gbs / read_gbs, m.cached_us, m.cached_gbs);
    }
    if (!spec_rows.empty()) {
      fmt::print("\nspeculative decoding, greedy, {} tokens, --draft-max {} ({}), best of {} alternated runs each:\n\n", spec_tokens, draft_max,
                 spec_fixed ? "fixed" : "adaptive", spec_repeats);
      fmt::print("| {:<24} | {:<16} | {:<10} | {:>11} | {:>11} | {:>8} | {:>15} | {:>10} |\n", "target", "drafter", "prompt", "plain tok/s", "spec tok/s",
                 "speed-up", "accepted", "mean kept");
      fmt::print("|{:-<26}|{:-<18}|{:-<12}|{:->13}|{:->13}|{:->10}|{:->17}|{:->12}|\n", "", "", "", "", "", "", "", "");
      for (const SpecRow &r : spec_rows)
        fmt::print("| {:<24} | {:<16} | {:<10} | {:>11.2f} | {:>11.2f} | {:>7.2f}x | {:>6}/{:<5} {:>3.0f}% | {:>10.2f} |\n", r.target, r.drafter, r.prompt,
                   r.plain_tps, r.spec_tps, r.spec_tps / r.plain_tps, r.accepted, r.drafted, r.drafted ? 100.0 * r.accepted / r.drafted : 0.0,
                   r.checks ? double(r.accepted) / r.checks : 0.0);
    }
    CacheStats cs = cache_stats();
    fmt::print("\ndecode tok/s over the total time of the steps: ");
    for (size_t i = 0; i < rows.size(); ++i) fmt::print("{}{:.2f}", i ? ", " : "", rows[i].decode_mean_tps);
    fmt::print("\nkernels: {} compiled ({:.0f} ms), {} loaded from the disk cache; warm-up ", cs.compiled, cs.compile_ms, cs.disk_hits);
    for (size_t i = 0; i < rows.size(); ++i) fmt::print("{}{:.1f} s", i ? ", " : "", rows[i].warmup_ms / 1e3);
    fmt::print(".\nbandwidth: {}; for each model one before each round of its decode steps and one after the last, each round judged by the better one next to it (decode "
               "reads its weights once per token, and the KV cache of its context: KV/token at the middle timed step's; the fraction is the median round's), for the single products the best of the run's first and last: {:.2f} GB/s. Every "
               "measurement of the run: ",
               ceiling.what, read_gbs);
    fmt::print("first {:.2f}", first_gbs);
    for (const Row &r : rows) fmt::print(", {:.2f} ({})", fmt::join(r.streams_gbs, ", "), r.model);
    fmt::print(", last {:.2f} GB/s.\ndecode's fraction of the stream by round: ", last_gbs);
    for (size_t i = 0; i < rows.size(); ++i) {
      std::vector<std::string> percents;
      for (double f : rows[i].round_fractions) percents.push_back(fmt::format("{:.0f}%", 100 * f));
      fmt::print("{}{} {}", i ? "; " : "", rows[i].model, fmt::join(percents, ", "));
    }
    fmt::print(".\n");
  } catch (const Error &e) {
    fmt::print(stderr, "kdsl-bench-engine: error: {}\n", e.what());
    if (remove_tmp && !tmp.empty()) std::filesystem::remove_all(tmp);
    return 1;
  }
  if (remove_tmp) std::filesystem::remove_all(tmp);
  return 0;
}
