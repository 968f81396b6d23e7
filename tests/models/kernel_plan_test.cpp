// kernel_plan_test.cpp - the kernel plan holds every (kernel, specialization, options) the engine launches: generation with drafters, recorded beside launching
#include <doctest/doctest.h>

#include <algorithm>
#include <iterator>
#include <memory>
#include <optional>
#include <set>

#include <kdsl/autotune.h>
#include <kdsl/kdsl.h>

#include "kernels/launch_recorder.h"
#include "models/engine/engine.h"
#include "models/engine/generator.h"
#include "models/engine/kernel_plan.h"
#include "models/gguf/gguf_file.h"
#include "models/spec/model_drafter.h"
#include "models/spec/ngram_drafter.h"
#include "models/spec/self_draft.h"
#include "models/synth/synth_model.h"
#include "tests/models/shared_models.h"
#include "tests/scratch_cache.h"
#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl::models;

namespace {

std::string synthetic(const std::string &preset, GgmlType type, const std::string &name) {
  SynthConfig c = synth_preset(preset);
  c.weight_type = c.embedding_type = type;
  std::string path = test::scratch_path(name);
  write_synthetic_model(c, path);
  return path;
}

std::set<std::string> texts(const std::vector<kernels::RecordedKernel> &kernels) {
  std::set<std::string> out;
  for (const kernels::RecordedKernel &k : kernels) out.insert(k.text());
  return out;
}

// Prompts of every kind of chunking for prefill chunks of `batch` rows: shorter than one, one
// exactly, and longer (a full chunk then a part), with repeats for the n-gram drafter.
std::vector<std::vector<int>> prompts(int batch, int vocab) {
  std::vector<std::vector<int>> out;
  for (int length : {1, 3, batch, batch + 1, 2 * batch + 5}) {
    std::vector<int> p = {1};
    for (int i = 1; i < length; ++i) p.push_back(3 + (i % 5) * 37 % (vocab - 3));
    out.push_back(p);
  }
  return out;
}

enum class Drafting { None, Ngram, NgramTree, SelfDraftQ8, SelfDraftQ8Tree };

// Generates from every prompt with launches recorded beside running them, and checks that the
// plan for the same options holds every launch.
void check_plan_covers_generation(const std::string &path, Drafting drafting, kernels::KvTypes kv = {}, DecodeGraph graph = DecodeGraph::Auto) {
  ModelWeights model = load_model_weights(path);
  auto tok = load_tokenizer(GgufFile(path));
  const int batch = 8, context = 96, draft_max = 5;
  const Device &cpu = kdsl_test::cpu();
  std::unique_ptr<ModelWeights> draft_model;
  if (drafting == Drafting::SelfDraftQ8 || drafting == Drafting::SelfDraftQ8Tree) draft_model = std::make_unique<ModelWeights>(self_draft_weights(model, {.type = GgmlType::Q8_0}));

  KernelPlanOptions po;
  po.batch_sizes = {batch};
  po.context = context;
  po.draft_max = drafting == Drafting::None ? 0 : draft_max;
  po.draft_model = draft_model.get();
  po.draft_trees = drafting == Drafting::NgramTree || drafting == Drafting::SelfDraftQ8Tree;
  po.kv_types = kv;
  po.decode_graph = graph;
  KernelPlan plan = plan_kernels(model, cpu, po);
  const std::set<std::string> planned = texts(plan.kernels);
  REQUIRE(!planned.empty());
  CHECK(plan.context == context);
  CHECK(plan.steps >= context);

  kernels::LaunchRecorder launched(kernels::LaunchRecorder::Mode::BesideLaunching);
  EngineOptions eo{.context = context, .max_batch = batch, .max_logit_rows = po.draft_max + 1, .kv_types = kv, .recorder = &launched, .decode_graph = graph};
  Engine engine(model, cpu, eo);
  std::unique_ptr<Drafter> drafter;
  if (drafting == Drafting::Ngram) drafter = std::make_unique<NgramDrafter>();
  if (drafting == Drafting::NgramTree) drafter = std::make_unique<NgramDrafter>(1, 4, 3);
  SamplerParams sp{.temperature = 0};
  if (draft_model) {
    EngineOptions de{.context = context, .max_batch = batch, .recorder = &launched};
    drafter = std::make_unique<ModelDrafter>(*draft_model, engine.vocab(), cpu, de, sp,
                                             ModelDrafterOptions{.branches = drafting == Drafting::SelfDraftQ8Tree ? 3 : 1});
  }
  const int64_t launches_before = cache_stats().launches;
  int64_t checks = 0;
  for (const std::vector<int> &prompt : prompts(batch, engine.vocab())) {
    Sampler sampler(sp);
    GenerateOptions go;
    go.max_tokens = 24;
    go.ignore_eos = true;
    go.drafter = drafter.get();
    go.spec = SpecOptions{.draft_max = draft_max, .adaptive = false};
    GenerationResult r = generate(engine, *tok, sampler, prompt, go);
    checks += r.spec_checks;
  }
  if (drafting != Drafting::None) CHECK(checks > 0);  // speculation was exercised
  // Every launch went through the Library's recording: none bypassed what the plan walks.
  CHECK(launched.recorded_launches() == cache_stats().launches - launches_before);
  const std::vector<kernels::RecordedKernel> ran = launched.kernels();
  REQUIRE(!ran.empty());
  for (const kernels::RecordedKernel &k : ran) {
    CAPTURE(k.text());
    CHECK(planned.count(k.text()) == 1);
  }
  MESSAGE(path, ": ", ran.size(), " kernels launched, ", planned.size(), " planned over ", plan.steps, " steps");
}

}  // namespace

TEST_CASE("kernel plan: every kernel generation launches is planned (f16 and Q4_0; plain, n-gram and a Q8_0 self-draft)") {
  std::string f16 = synthetic("tiny", GgmlType::F16, "plan-tiny-f16.gguf");
  std::string q4 = synthetic("tiny", GgmlType::Q4_0, "plan-tiny-q4_0.gguf");
  for (const std::string &path : {f16, q4})
    for (Drafting d : {Drafting::None, Drafting::Ngram, Drafting::SelfDraftQ8}) {
      CAPTURE(path);
      CAPTURE(int(d));
      check_plan_covers_generation(path, d);
    }
}

TEST_CASE("kernel plan: decode through the graph (--decode-graph on) plans its position-independent kernels, as they run") {
  std::string f16 = synthetic("tiny", GgmlType::F16, "plan-tiny-f16.gguf");
  check_plan_covers_generation(f16, Drafting::None, {}, DecodeGraph::On);
  check_plan_covers_generation(f16, Drafting::Ngram, {kernels::WeightType::F16, kernels::WeightType::F16}, DecodeGraph::On);
  check_plan_covers_generation(f16, Drafting::NgramTree, {}, DecodeGraph::On);
  ModelWeights model = load_model_weights(f16);
  auto has = [&](DecodeGraph g, const char *kernel) {
    for (const std::string &k : texts(plan_kernels(model, kdsl_test::cpu(), {.batch_sizes = {4}, .context = 40, .decode_graph = g}).kernels))
      if (k.find(kernel) != std::string::npos) return true;
    return false;
  };
  CHECK(has(DecodeGraph::On, "attention_decode_at<"));
  CHECK(has(DecodeGraph::On, "kv_append_at<"));
  CHECK_FALSE(has(DecodeGraph::Off, "attention_decode_at<"));
  CHECK(has(DecodeGraph::Off, "attention_decode<"));
}

TEST_CASE("kernel plan: token trees (n-gram, self-draft) and f16 / bf16 / q8_0 KV caches are planned as they run") {
  std::string f16 = synthetic("tiny", GgmlType::F16, "plan-tiny-f16.gguf");
  check_plan_covers_generation(f16, Drafting::NgramTree);
  check_plan_covers_generation(f16, Drafting::SelfDraftQ8Tree);
  check_plan_covers_generation(f16, Drafting::NgramTree, {kernels::WeightType::F16, kernels::WeightType::F16});
  check_plan_covers_generation(f16, Drafting::None, {kernels::WeightType::BF16, kernels::WeightType::BF16});
  // q8_0 needs heads of whole blocks of 32: qwen3-tiny's head_dim is 32.
  check_plan_covers_generation(synthetic("qwen3-tiny", GgmlType::F32, "plan-qwen3-tiny-kvq8.gguf"), Drafting::NgramTree,
                               {kernels::WeightType::Q8_0, kernels::WeightType::Q8_0});
}

TEST_CASE("kernel plan: autotuned products plan every candidate until their winners are recorded, then the winners alone") {
  kdsl::test::ScratchCache cache("plan_tuned_cache");
  const char *saved = std::getenv("KDSL_AUTOTUNE");
  const std::optional<std::string> restore = saved ? std::optional<std::string>(saved) : std::nullopt;
  ::setenv("KDSL_AUTOTUNE", "1", 1);
  kdsl::detail::forget_tuning_choices();
  std::string f16 = synthetic("tiny", GgmlType::F16, "plan-tiny-f16.gguf");
  ModelWeights model = load_model_weights(f16);
  KernelPlanOptions po;
  po.batch_sizes = {8};
  po.context = 96;
  po.draft_max = 5;
  const std::set<std::string> every = texts(plan_kernels(model, kdsl_test::cpu(), po).kernels);
  // Generation times the candidates (each launch recorded) and records the winners.
  const int64_t timed = kdsl::tune_stats().timed;
  check_plan_covers_generation(f16, Drafting::Ngram);
  CHECK(kdsl::tune_stats().timed > timed);
  // A new process plans the recorded winners alone, and launches only them.
  kdsl::detail::forget_tuning_choices();
  const std::set<std::string> winners = texts(plan_kernels(model, kdsl_test::cpu(), po).kernels);
  CHECK(winners.size() < every.size());
  for (const std::string &k : winners) {
    CAPTURE(k);
    CHECK(every.count(k) == 1);
  }
  kdsl::detail::forget_tuning_choices();
  const int64_t timed_before_rerun = kdsl::tune_stats().timed;
  check_plan_covers_generation(f16, Drafting::Ngram);
  CHECK(kdsl::tune_stats().timed == timed_before_rerun);
  if (restore) ::setenv("KDSL_AUTOTUNE", restore->c_str(), 1);
  else ::unsetenv("KDSL_AUTOTUNE");
}

TEST_CASE("kernel plan: qwen3 (QK norm, tied embeddings) is planned as it runs") {
  check_plan_covers_generation(synthetic("qwen3-tiny", GgmlType::F32, "plan-qwen3-tiny.gguf"), Drafting::Ngram);
}

TEST_CASE("kernel plan: recording instead of launching compiles and runs nothing") {
  std::string path = synthetic("tiny", GgmlType::F16, "plan-nothing-runs.gguf");
  ModelWeights model = load_model_weights(path);
  const CacheStats before = cache_stats();
  KernelPlan plan = plan_kernels(model, kdsl_test::cpu(), {.batch_sizes = {4, 16}, .context = 40, .draft_max = 3});
  const CacheStats after = cache_stats();
  CHECK(after.launches == before.launches);
  CHECK(after.compiled == before.compiled);
  CHECK(after.memory_hits + after.disk_hits == before.memory_hits + before.disk_hits);
  CHECK(plan.launches > plan.steps);
  // Each batch size's prefill kernels: a 16-row chunk is a few-rows product of 16 rows, which
  // a batch of 4 never launches.
  KernelPlan small = plan_kernels(model, kdsl_test::cpu(), {.batch_sizes = {4}, .context = 40, .draft_max = 3});
  CHECK(small.kernels.size() < plan.kernels.size());
  std::set<std::string> all = texts(plan.kernels);
  for (const kernels::RecordedKernel &k : small.kernels) CHECK(all.count(k.text()) == 1);
}

TEST_CASE("kernel plan: a GPU's multiprocessors choose the decode attention's split kernels") {
  std::string path = synthetic("tiny", GgmlType::F32, "plan-gpu.gguf");
  ModelWeights model = load_model_weights(path);
  // A GPU's decode attention is sized for the whole context (its launches go into the decode
  // graph): one processor splits it in 2 (4 programs over 2 kv heads); 132 split 2048
  // positions in 16, a count the combine kernel is specialized on (divisible by 16).
  std::set<std::string> one = texts(plan_kernels(model, kdsl_test::cpu(), {.batch_sizes = {4}, .context = 2048, .gpu = true, .threads = 1}).kernels);
  std::set<std::string> h100 = texts(plan_kernels(model, kdsl_test::cpu(), {.batch_sizes = {4}, .context = 2048, .gpu = true, .threads = 132}).kernels);
  std::vector<std::string> only_h100;
  std::set_difference(h100.begin(), h100.end(), one.begin(), one.end(), std::back_inserter(only_h100));
  REQUIRE(!only_h100.empty());
  for (const std::string &k : only_h100) {
    CAPTURE(k);
    CHECK(k.find("attention_combine") != std::string::npos);
  }
}

TEST_CASE("kernel plan: options out of range are refused by name") {
  std::string path = synthetic("tiny", GgmlType::F32, "plan-errors.gguf");
  ModelWeights model = load_model_weights(path);
  const Device &cpu = kdsl_test::cpu();
  CHECK(kdsl_test::error_text([&] { plan_kernels(model, cpu, {.batch_sizes = {}}); }).find("--batch") != std::string::npos);
  CHECK(kdsl_test::error_text([&] { plan_kernels(model, cpu, {.batch_sizes = {0}}); }).find("batch size 0") != std::string::npos);
  CHECK(kdsl_test::error_text([&] { plan_kernels(model, cpu, {.context = 1}); }).find("at least 2") != std::string::npos);
  CHECK(kdsl_test::error_text([&] { plan_kernels(model, cpu, {.gpu = true}); }).find("multiprocessors") != std::string::npos);
  CHECK(kdsl_test::error_text([&] { plan_kernels(model, cpu, {.draft_model = &model}); }).find("--draft-max") != std::string::npos);
}

// A GPU's bf16 model: the norms and SwiGLU write bf16 rows, which the prefill products read as
// stored (Library::product_input_type); the attention's output stays f32, and so does the
// CPU's plan for the same model.
TEST_CASE("kernel plan: a GPU's bf16 products read bf16 rows, written so by the norms and SwiGLU; the CPU's stay f32") {
  std::string path = synthetic("tiny", GgmlType::BF16, "plan-gpu-bf16.gguf");
  ModelWeights model = load_model_weights(path);
  auto planned = [&](bool gpu) { return texts(plan_kernels(model, kdsl_test::cpu(), {.batch_sizes = {32}, .context = 64, .gpu = gpu, .threads = 4}).kernels); };
  auto count = [](const std::set<std::string> &kernels, const std::string &name) {
    return std::count_if(kernels.begin(), kernels.end(), [&](const std::string &k) { return k.find(name) != std::string::npos; });
  };
  const std::set<std::string> gpu = planned(true), cpu = planned(false);
  CHECK(count(gpu, "matmul_narrow<kdsl::BF16_tag, 64, 128, 64, false, kdsl::BF16_tag>") > 0);  // q, k, v, gate, up, down
  CHECK(count(gpu, "matmul_narrow<kdsl::BF16_tag, 64, 128, 64, false>") > 0);                  // the attention's output
  CHECK(count(gpu, "matvec_wide<kdsl::BF16_tag, 8, 256, false, kdsl::BF16_tag>") > 0);        // a prompt's logits
  CHECK(count(gpu, "rmsnorm<64, false, kdsl::BF16_tag>") == 1);
  CHECK(count(gpu, "rmsnorm<64, true, kdsl::BF16_tag>") == 1);
  CHECK(count(gpu, "swiglu<1024, kdsl::BF16_tag>") == 1);
  CHECK(count(gpu, "rmsnorm<64, true>") == 0);  // every norm before a product writes bf16
  CHECK(count(cpu, "BF16_tag>") == 0);          // no kernel of the CPU's writes or reads bf16 rows (its weights are bf16: `BF16_tag,`)
  CHECK(count(cpu, "swiglu<1024>") == 1);
}
