// kdsl_run.cpp - kdsl-run: generate text from a GGUF or llama2.c model with kdsl kernels, as llama.cpp's main does
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>

#include <kdsl/autotune.h>
#include <kdsl/kdsl.h>

#include "jit_cache/disk_cache.h"
#include "models/common/mapped_file.h"
#include "models/common/printable.h"
#include "models/engine/engine.h"
#include "models/engine/generator.h"
#include "models/gguf/gguf_file.h"
#include "models/spec/model_drafter.h"
#include "models/spec/ngram_drafter.h"
#include "models/spec/self_draft.h"
#include "models/engine/model_tokenizer.h"
#include "models/tokenizer/chat_template.h"
#include "runtime/bandwidth_record.h"
#include "runtime/thread_pool.h"
#include "src/tools/decode_graph_option.h"
#include "src/tools/kv_cache_type.h"
#include "src/tools/llama_cpp_flags.h"
#include "src/tools/tool_main.h"

using namespace kdsl;
using namespace kdsl::models;

namespace {

struct Options {
  std::string model, tokenizer_path, prompt, prompt_file, device = "cpu", cache_dir, output_format = "text", chat_template;
  std::string system_prompt, flash_attn = "auto", decode_graph = "auto";
  std::vector<std::string> reverse_prompts;
  int n = 128, top_k = 40, ctx = 0, threads = 0, batch = 512, repeat_last_n = 64;
  float temp = 0.8f, top_p = 0.95f, min_p = 0.05f, repeat_penalty = 1.0f, presence_penalty = 0.0f, frequency_penalty = 0.0f;
  std::string seed;     // as typed; parse_seed turns it into seed_value once, after parsing
  uint64_t seed_value = 0;
  bool chat = false, verbose = false, seed_given = false, ignore_eos = false, no_display_prompt = false, escape = true;
  bool mlock = false, no_mmap = false, no_repack = false, log_disable = false, bandwidth = false;
  // Speculative decoding: --spec-ngram or a draft model (-md). 7 drafts make checks of 8 rows,
  // which the several-rows matrix-vector kernel streams the weights once for; it takes up to 16
  // rows, but the default was measured (bench/RESULTS.md) when it took 8 and has not been since.
  bool spec_ngram = false;
  std::string model_draft, draft_type;  // draft_type, draft_layers: self-speculation (the target's own weights)
  int draft_max = 7, draft_min = 0, draft_layers = 0, draft_branches = 1;
  std::string cache_type_k, cache_type_v;  // the KV cache's element types
  float draft_p_min = 0.75f;  // llama.cpp's default
};

// A prompt is at most a context of text; a file much larger than any context is a mistake
// (`-f /dev/zero`, the model file itself) and must not be read without bound.
constexpr std::streamsize kMaxPromptBytes = 16 << 20;

// --seed as llama.cpp takes it, a 64-bit unsigned number. CLI11 would wrap "-1" and saturate
// 2^64 silently; a seed that does not mean what was typed is refused.
uint64_t parse_seed(const std::string &text) {
  uint64_t value = 0;
  bool ok = !text.empty() && text.size() <= 20;
  for (char c : text) {
    if (!ok) break;
    unsigned digit = unsigned(c - '0');
    ok = digit <= 9 && !__builtin_mul_overflow(value, 10u, &value) && !__builtin_add_overflow(value, digit, &value);
  }
  if (!ok) throw Error(fmt::format("--seed '{}': expected a whole number from 0 to 18446744073709551615", text));
  return value;
}

// kdsl's workers spin between launches, so threads beyond the CPUs do not share a core, they
// fight over it: decode ran 10x slower at 1000 threads on 2 CPUs.
void check_thread_count(int threads) {
  int cpus = runtime::available_cpus();
  if (threads > cpus)
    throw Error(fmt::format("--threads {}: this process may run on {} CPUs, and more threads than CPUs only slow decoding down; "
                            "use at most {} (or 0 for all)", threads, cpus, cpus));
}

// --mlock: keep the mapped weights (and everything else) resident, as llama.cpp's --mlock does;
// where the memlock limit forbids it, say so and run on, as llama.cpp does.
void lock_in_memory() {
  if (::mlockall(MCL_CURRENT) != 0)
    fmt::print(stderr, "kdsl-run: warning: --mlock: could not lock the model in memory ({}); raise the memlock limit (ulimit -l)\n",
               std::strerror(errno));
}

// cpu; cuda or hip (GPU 0, or a clear error saying what is missing); auto: a CUDA GPU, else
// a HIP GPU, else the CPU.
Device pick_device(const Options &o) {
  check_thread_count(o.threads);
  if (o.device == "cpu") return Device::cpu(o.threads);
  if (o.device == "cuda" || o.device == "auto") {
    try {  // Device::cuda opens the driver as every caller does ($KDSL_LIBCUDA, else libcuda.so.1)
      return Device::cuda(0);
    } catch (const Error &e) {
      if (o.device == "cuda") throw Error(fmt::format("--device cuda: {}; use --device cpu", e.what()));
    }
  }
  if (o.device == "hip" || o.device == "auto") {
    try {  // Device::hip opens the HIP runtime ($KDSL_LIBAMDHIP64, else libamdhip64.so)
      return Device::hip(0);
    } catch (const Error &e) {
      if (o.device == "auto") return Device::cpu(o.threads);
      throw Error(fmt::format("--device hip: {}; use --device cpu", e.what()));
    }
  }
  throw Error(fmt::format("--device {}: expected cpu, cuda, hip or auto", o.device));
}

std::string read_prompt(const Options &o) {
  if (o.prompt_file.empty()) return o.prompt;
  struct stat st = {};
  if (::stat(o.prompt_file.c_str(), &st) != 0) throw Error(fmt::format("-f {}: cannot read the prompt file: {}", o.prompt_file, std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) throw Error(fmt::format("-f {}: expected a text file, found a directory", o.prompt_file));
  std::ifstream f(o.prompt_file, std::ios::binary);
  if (!f) throw Error(fmt::format("-f {}: cannot open the prompt file", o.prompt_file));
  std::string text(size_t(kMaxPromptBytes) + 1, '\0');
  f.read(text.data(), kMaxPromptBytes + 1);
  if (f.bad()) throw Error(fmt::format("-f {}: reading the prompt file failed", o.prompt_file));
  if (f.gcount() > kMaxPromptBytes)
    throw Error(fmt::format("-f {}: the prompt file is larger than {} MiB, more text than any context holds", o.prompt_file, kMaxPromptBytes >> 20));
  text.resize(size_t(f.gcount()));
  return text;
}

SamplerParams sampler_params(const Options &o) {
  SamplerParams p;
  p.temperature = o.temp;
  p.top_k = o.top_k;
  p.top_p = o.top_p;
  p.min_p = o.min_p;
  p.repetition_penalty = o.repeat_penalty;
  p.presence_penalty = o.presence_penalty;
  p.frequency_penalty = o.frequency_penalty;
  p.penalty_last_n = o.repeat_last_n;
  p.seed = o.seed_given ? o.seed_value : uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  return p;
}

void print_summary(const ModelWeights &m, const Device &dev, const GenerationResult &r, double load_ms, const runtime::MeasuredBandwidth &bandwidth,
                   kernels::KvTypes kv_types, const std::string &spec_drafter, bool json, nlohmann::json &out) {
  CacheStats cs = cache_stats();
  TuneStats ts = tune_stats();
  // Rates leave out first-use work (kernel compiles and autotuning, in wall time, reported
  // apart), so a cold cache does not masquerade as a slow engine.
  double prompt_ms = std::max(r.prompt_ms - r.prompt_compile_ms, 1e-3), gen_ms = std::max(r.generation_ms - r.generation_compile_ms, 1e-3);
  double prompt_tps = r.prompt_ids.size() / (prompt_ms / 1e3);
  size_t decode_steps = r.generated_ids.empty() ? 0 : r.generated_ids.size() - 1;
  double gen_tps = decode_steps ? decode_steps / (gen_ms / 1e3) : 0;
  // A step at context c reads c positions of keys and values besides the weights: the middle
  // generated step's context counts, as kdsl-bench-engine counts it.
  const int64_t middle_context = int64_t(r.prompt_ids.size()) + int64_t(decode_steps + 1) / 2;
  const int64_t kv_bytes_per_token = decode_steps ? middle_context * kv_cache_bytes_per_position(m.hparams, kv_types) : 0;
  double gb_per_token = double(m.bytes_per_token()) / 1e9;
  double achieved = gen_tps * (gb_per_token + double(kv_bytes_per_token) / 1e9);
  double ceiling = bandwidth.gbs;
  // Speculation: the share of drafts kept, and drafts kept per check (each check also yields
  // the target's own token after them).
  double acceptance = r.spec_drafted ? double(r.spec_accepted) / double(r.spec_drafted) : 0.0;
  double mean_accepted = r.spec_checks ? double(r.spec_accepted) / double(r.spec_checks) : 0.0;
  if (json) {
    out["summary"] = {{"load_ms", load_ms},
                      {"prompt_tokens", r.prompt_ids.size()},
                      {"prompt_tokens_per_s", prompt_tps},
                      {"prompt_ms", r.prompt_ms},
                      {"prompt_compile_ms", r.prompt_compile_ms},
                      {"generated_tokens", r.generated_ids.size()},
                      {"generation_tokens_per_s", gen_tps},
                      {"generation_ms", r.generation_ms},
                      {"generation_compile_ms", r.generation_compile_ms},
                      {"weight_bytes_per_token", m.bytes_per_token()},
                      {"kv_cache_bytes_per_token", kv_bytes_per_token},
                      {"achieved_gb_per_s", achieved},
                      {"measured_bandwidth_gb_per_s", ceiling},
                      {"bandwidth_measured_by", bandwidth.what},
                      {"kernels_compiled", cs.compiled},
                      {"kernel_cache_memory_hits", cs.memory_hits},
                      {"kernel_cache_disk_hits", cs.disk_hits},
                      {"compile_ms", cs.compile_ms},
                      {"autotune_timed", ts.timed},
                      {"autotune_recorded", ts.recorded},
                      {"stop_reason", r.stop_reason}};
    if (!spec_drafter.empty()) {
      out["summary"]["spec_drafter"] = spec_drafter;
      out["summary"]["spec_drafted"] = r.spec_drafted;
      out["summary"]["spec_accepted"] = r.spec_accepted;
      out["summary"]["spec_checks"] = r.spec_checks;
      out["summary"]["spec_empty_drafts"] = r.spec_empty;
      out["summary"]["spec_plain_steps"] = r.spec_plain;
      out["summary"]["spec_acceptance_rate"] = acceptance;
      out["summary"]["spec_mean_accepted_length"] = mean_accepted;
      out["summary"]["spec_accepted_histogram"] = r.spec_accepted_histogram;
    }
    return;
  }
  fmt::print(stderr, "\n--- kdsl-run on {} ---\n", dev.name());
  fmt::print(stderr, "load            {:10.1f} ms\n", load_ms);
  auto compiling = [](double ms) { return ms > 0 ? fmt::format(", plus {:.0f} ms compiling and tuning kernels", ms) : std::string(); };
  fmt::print(stderr, "prompt          {:10.1f} tokens/s  ({} tokens in {:.1f} ms{})\n", prompt_tps, r.prompt_ids.size(), prompt_ms,
             compiling(r.prompt_compile_ms));
  fmt::print(stderr, "generation      {:10.1f} tokens/s  ({} tokens in {:.1f} ms{}; stop: {})\n", gen_tps, r.generated_ids.size(), gen_ms,
             compiling(r.generation_compile_ms), r.stop_reason);
  fmt::print(stderr, "weights/token   {:10.2f} MB, KV cache {:.2f} MB; achieved {:.2f} GB/s of {:.2f} GB/s measured ({:.0f}%; {})\n", gb_per_token * 1e3,
             double(kv_bytes_per_token) / 1e6, achieved, ceiling, ceiling > 0 ? 100 * achieved / ceiling : 0.0, bandwidth.what);
  if (ceiling > 0 && achieved > ceiling)
    fmt::print(stderr, "                (above the recorded ceiling, which was measured on a busier machine: run once with --bandwidth)\n");
  if (!spec_drafter.empty()) {
    std::string histogram;
    for (size_t j = 0; j < r.spec_accepted_histogram.size(); ++j)
      if (r.spec_accepted_histogram[j]) histogram += fmt::format(" {}:{}", j, r.spec_accepted_histogram[j]);
    fmt::print(stderr, "speculative     {}: {} drafted, {} accepted ({:.1f}%), {} checks, mean accepted length {:.2f}; checks by drafts kept:{}\n",
               spec_drafter, r.spec_drafted, r.spec_accepted, 100 * acceptance, r.spec_checks, mean_accepted, histogram.empty() ? " none" : histogram);
    fmt::print(stderr, "                {} steps asked for drafts and got none; {} plain steps (speculation off where it would not pay)\n", r.spec_empty,
               r.spec_plain);
  }
  fmt::print(stderr, "kernels         {} compiled in {:.0f} ms, {} memory and {} disk cache hits\n", cs.compiled, cs.compile_ms, cs.memory_hits, cs.disk_hits);
  if (ts.timed || ts.recorded)
    fmt::print(stderr, "autotune        {} kernel shapes timed (first use on this device), {} read from tuning records\n", ts.timed, ts.recorded);
}

// A draft model must share the target's tokens: the same count, and in a GGUF the same pieces
// (a different tokenizer of the same size would draft nonsense, slowly, though the output
// would stay exact).
void check_draft_tokenizer(const Options &o, const ModelWeights &draft_model, const Tokenizer &target) {
  if (!draft_model.gguf) return;  // a llama2.c checkpoint holds no tokenizer; its size is checked on load
  std::unique_ptr<Tokenizer> draft = load_tokenizer(*draft_model.gguf);
  const std::vector<std::string> &a = target.vocab().pieces, &b = draft->vocab().pieces;
  if (a.size() != b.size()) return;  // the drafter's own check names both sizes
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i])
      throw Error(fmt::format("--model-draft {}: its token {} is '{}' but the target's is '{}': a draft model must share the target's tokenizer",
                              o.model_draft, i, printable(b[i]), printable(a[i])));
}

// The drafter the options ask for, or none.
std::unique_ptr<Drafter> make_drafter(const Options &o, const Device &dev, const ModelWeights &model, const Engine &engine, const Tokenizer &tok,
                                      const SamplerParams &sp, std::unique_ptr<ModelWeights> &draft_weights) {
  if (o.spec_ngram) return std::make_unique<NgramDrafter>(1, 4, o.draft_branches);
  if (!o.draft_type.empty() || o.draft_layers > 0) {
    SelfDraftOptions so;
    so.layers = o.draft_layers;
    if (!o.draft_type.empty()) so.type = parse_self_draft_type("--draft-type", o.draft_type);
    draft_weights = std::make_unique<ModelWeights>(self_draft_weights(model, so));
  } else if (!o.model_draft.empty()) {
    tools::report_sigbus_for("kdsl-run", o.model_draft);
    draft_weights = std::make_unique<ModelWeights>(load_model_weights(o.model_draft));
    check_draft_tokenizer(o, *draft_weights, tok);
  } else {
    return nullptr;
  }
  EngineOptions eo;
  eo.context = engine.context();
  eo.max_batch = o.batch;
  eo.sampled_vocab = tok.vocab_size();
  eo.row_groups = !o.no_repack;
  eo.decode_graph = tools::decode_graph_mode(o.decode_graph);
  return std::make_unique<ModelDrafter>(*draft_weights, engine.vocab(), dev, eo, sp, ModelDrafterOptions{.p_min = o.draft_p_min, .branches = o.draft_branches});
}

int run(const Options &o) {
  if (!o.cache_dir.empty()) setenv("KDSL_CACHE_DIR", o.cache_dir.c_str(), 1);
  if (o.flash_attn == "off")
    throw Error("--flash-attn off: kdsl's attention kernels are always fused (flash attention); leave the option out or say on/auto");
  if (!o.system_prompt.empty() && !o.chat) throw Error("--system-prompt (-sys) is the first message of a chat: add --chat (-cnv)");
  const bool self_draft = !o.draft_type.empty() || o.draft_layers > 0;
  const bool speculative = o.spec_ngram || !o.model_draft.empty() || self_draft;
  if (int(o.spec_ngram) + int(!o.model_draft.empty()) + int(self_draft) > 1)
    throw Error("--spec-ngram, --model-draft (-md) and a self-draft (--draft-type, --draft-layers) are different drafters: choose one");
  if (!speculative && (o.draft_max != 7 || o.draft_min != 0 || o.draft_p_min != 0.75f))
    throw Error("--draft-max, --draft-min and --draft-p-min set speculative decoding, which is off: add --spec-ngram, --model-draft FILE (-md) "
                "or --draft-type TYPE");
  if (o.draft_min > o.draft_max) throw Error(fmt::format("--draft-min {}: expected at most --draft-max ({})", o.draft_min, o.draft_max));
  if (o.draft_branches > 1 && !speculative)
    throw Error("--draft-branches drafts a token tree for speculative decoding, which is off: add --spec-ngram, --model-draft FILE (-md) or --draft-type TYPE");
  tools::report_sigbus_for("kdsl-run", o.model);
  auto t0 = std::chrono::steady_clock::now();
  Device dev = pick_device(o);
  ModelWeights model = load_model_weights(o.model);
  std::unique_ptr<Tokenizer> tok = open_model_tokenizer(model, o.model, o.tokenizer_path);
  if (o.mlock) lock_in_memory();
  EngineOptions eo;
  eo.context = o.ctx;
  eo.max_batch = o.batch;
  eo.sampled_vocab = tok->vocab_size();  // a tokenizer smaller than the embedding: its padding rows are never sampled
  eo.kv_types = tools::kv_cache_types(o.cache_type_k, o.cache_type_v);
  eo.row_groups = !o.no_repack;
  eo.decode_graph = tools::decode_graph_mode(o.decode_graph);
  if (speculative) eo.max_logit_rows = o.draft_max + 1;
  GenerateOptions go;
  go.max_tokens = o.n, go.ignore_eos = o.ignore_eos, go.stop_strings = o.reverse_prompts;
  go.spec = SpecOptions{.draft_max = o.draft_max, .draft_min = o.draft_min};
  Engine engine(model, dev, eo);
  const SamplerParams sampling = sampler_params(o);  // one seed for the target and the draft model
  std::unique_ptr<ModelWeights> draft_weights;
  std::unique_ptr<Drafter> drafter = make_drafter(o, dev, model, engine, *tok, sampling, draft_weights);
  go.drafter = drafter.get();
  double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  bool json = o.output_format == "json";
  if (o.verbose)
    fmt::print(stderr, "model {}: {} layers, dim {}, {} heads ({} kv), vocab {}, context {}\n", o.model, model.hparams.n_layer, model.hparams.n_embd,
               model.hparams.n_head, model.hparams.n_head_kv, model.hparams.n_vocab, engine.context());

  if (o.chat) {
    if (!model.gguf) throw Error(fmt::format("--chat reads the chat template from a GGUF model; {} is a llama2.c checkpoint", o.model));
    ChatTemplate tmpl = select_chat_template(*model.gguf, o.chat_template);
    std::vector<ChatMessage> history;
    if (!o.system_prompt.empty()) history.push_back({"system", o.escape ? tools::process_escapes(o.system_prompt) : o.system_prompt});
    std::string line;
    fmt::print(stderr, "chat mode: type a message, an empty line ends the session\n");
    while (fmt::print("> "), std::fflush(stdout), std::getline(std::cin, line) && !line.empty()) {
      history.push_back({"user", line});
      Sampler sampler(sampler_params(o));
      auto ids = tok->encode(render_chat(tmpl, history), tok->vocab().add_bos, true);
      auto r = generate(engine, *tok, sampler, ids, go, [](std::string_view s) { fmt::print("{}", s), std::fflush(stdout); });
      fmt::print("\n");
      history.push_back({"assistant", r.text});
    }
    return 0;
  }

  std::string prompt = read_prompt(o);
  if (o.escape && o.prompt_file.empty()) prompt = tools::process_escapes(prompt);  // as llama.cpp: -p text only
  // BOS as the model's tokenizer says (llama: yes; qwen: no), as llama.cpp does.
  std::vector<int> ids = tok->encode(prompt, tok->vocab().add_bos);
  check_prompt_fits(engine, ids);  // before the prompt is echoed
  Sampler sampler(sampling);
  if (!json && !o.no_display_prompt) fmt::print("{}", prompt), std::fflush(stdout);
  GenerationResult r = generate(engine, *tok, sampler, ids, go, [&](std::string_view s) {
    if (!json) fmt::print("{}", s), std::fflush(stdout);
  });
  if (!json) fmt::print("\n"), std::fflush(stdout);
  nlohmann::json out;
  if (json) out = {{"prompt", prompt}, {"prompt_ids", r.prompt_ids}, {"generated_ids", r.generated_ids}, {"text", r.text}};
  runtime::MeasuredBandwidth bandwidth = runtime::recorded_device_bandwidth(dev, jit_cache::DiskCache::default_dir(), o.bandwidth);
  print_summary(model, dev, r, load_ms, bandwidth, eo.kv_types, drafter ? drafter->name() : std::string(), json, out);
  // Random or byte-level tokens can leave malformed UTF-8; JSON gets U+FFFD in their place.
  if (json) fmt::print("{}\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kdsl-run: text generation with kdsl kernels (GGUF llama/qwen2/qwen3, llama2.c checkpoints); "
               "llama.cpp's spellings of the same options are accepted"};
  Options o;
  app.add_option("-m,--model", o.model, "model file: GGUF, or a llama2.c checkpoint (with -z)")->required();
  app.add_option("-z,--tokenizer", o.tokenizer_path, "llama2.c tokenizer.bin");
  auto *prompt = app.add_option("-p,--prompt", o.prompt, "prompt text");
  app.add_option("-f,--file", o.prompt_file, "read the prompt from a file")->excludes(prompt);
  app.add_flag("-e,--escape,!--no-escape", o.escape, "process \\n \\t \\\" \\xNN ... in -p and -sys (default: on, as llama.cpp)");
  app.add_flag("--no-display-prompt", o.no_display_prompt, "do not print the prompt before the generated text");
  app.add_option("-n,--n-predict", o.n, "tokens to generate (-1: until end of text or a full context)")->check(CLI::Range(-1, 1 << 30));
  app.add_flag("--ignore-eos", o.ignore_eos, "go on past end-of-text tokens");
  app.add_option("-r,--reverse-prompt", o.reverse_prompts, "stop when the generated text ends with this (repeatable)");
  app.add_option("--temp", o.temp, "temperature (0: greedy)");
  app.add_option("--top-k", o.top_k, "keep the k most likely tokens (0: all)");
  app.add_option("--top-p", o.top_p, "nucleus sampling threshold");
  app.add_option("--min-p", o.min_p, "drop tokens below min-p times the most likely");
  app.add_option("--repeat-penalty", o.repeat_penalty, "penalty for recently seen tokens (1: none)");
  app.add_option("--repeat-last-n", o.repeat_last_n, "recent tokens the penalties see (-1: all, 0: none)")->check(CLI::Range(-1, 1 << 30));
  app.add_option("--presence-penalty", o.presence_penalty, "subtracted from the logit of a token seen in the window (0: none)");
  app.add_option("--frequency-penalty", o.frequency_penalty, "subtracted once per occurrence in the window (0: none)");
  app.add_option("-s,--seed", o.seed, "random seed, 0 to 2^64-1 (same seed, same text)")->each([&](const std::string &) { o.seed_given = true; });
  app.add_option("-c,--ctx-size,--ctx", o.ctx, "context length in tokens (default: the model's, capped so the KV cache uses at most a quarter of free memory)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("-b,--batch-size", o.batch, "prompt tokens per prefill pass")->check(CLI::Range(1, 1 << 16));
  app.add_option("--device", o.device, "cpu, cuda, hip or auto");
  app.add_option("-t,--threads", o.threads, "CPU threads (0: every CPU this process may run on)")->check(CLI::NonNegativeNumber);
  app.add_option("--cache-type-k", o.cache_type_k, "the KV cache's element type: f32 (default), f16, bf16 or q8_0 (blocks of 32 along head_dim, which must be a multiple of 32), for keys and values (-ctk; alone it sets both)");
  app.add_option("--cache-type-v", o.cache_type_v, "as --cache-type-k (-ctv; alone it sets both; the two must agree)");
  app.add_option("--flash-attn", o.flash_attn, "on or auto (kdsl's attention is always fused); off is refused")->check(CLI::IsMember({"on", "off", "auto"}));
  app.add_flag("--chat,--conversation", o.chat, "interactive chat with the model's chat template (-cnv)");
  app.add_option("--system-prompt", o.system_prompt, "with --chat: the system message (-sys)");
  app.add_option("--chat-template", o.chat_template, "override the chat template: llama2, llama3, chatml, mistral");
  app.add_flag("--mlock", o.mlock, "lock the model in memory");
  app.add_flag("--no-mmap", o.no_mmap, "read the model into memory instead of mapping it");
  app.add_flag("--no-repack", o.no_repack,
               "leave the matrices as the file stores them (-nr; on the CPU they are otherwise copied once at load with their rows grouped by 16 or 8, "
               "which decodes faster and holds a copy of them in memory)");
  tools::add_decode_graph_option(app, o.decode_graph);
  app.add_flag("--log-disable", o.log_disable, "no kdsl log lines on stderr (errors are still printed)");
  app.add_flag("--bandwidth", o.bandwidth, "measure the device's memory bandwidth again for the summary (it is measured once and recorded in the cache directory)");
  app.add_flag("--spec-ngram", o.spec_ngram, "speculative decoding with n-gram (prompt) lookup: drafts from the prompt and the text so far");
  app.add_option("--model-draft", o.model_draft, "speculative decoding with this draft model (-md; the target's vocabulary, GGUF or llama2.c)");
  app.add_option("--draft-type", o.draft_type, "self-speculation: the target's own matrices requantized at load time to TYPE (" + self_draft_type_names() + ") draft");
  app.add_option("--draft-layers", o.draft_layers, "self-speculation: the target's first N layers draft (alone, or with --draft-type)")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--draft-max", o.draft_max, "at most this many drafted tokens per check (adapted below it to the acceptance rate)")
      ->check(CLI::Range(1, 64));
  app.add_option("--draft-branches", o.draft_branches,
                 "a token tree checked in one pass: with --spec-ngram up to N continuations (matches that go different ways); with a draft "
                 "model its N likeliest tokens at each position, the paths likeliest to be kept")
      ->check(CLI::Range(1, 8));
  app.add_option("--draft-min", o.draft_min, "a shorter draft is not checked (a plain step runs)")->check(CLI::Range(0, 64));
  app.add_option("--draft-p-min", o.draft_p_min, "a draft model stops drafting at a token it gives less probability than this")
      ->check(CLI::Range(0.0f, 1.0f));
  app.add_option("--cache-dir", o.cache_dir, "kernel cache folder (default $KDSL_CACHE_DIR or ~/.cache/kdsl)");
  app.add_flag("-v,--verbose", o.verbose, "print model details");
  app.add_option("--output-format", o.output_format, "text or json")->check(CLI::IsMember({"text", "json"}));
  return tools::run_tool("kdsl-run", "", [&] {
    if (int status = tools::parse_command_line(app, "kdsl-run", tools::translate_llama_cpp_flags(argc, argv)); status >= 0) return status;
    if (o.seed_given) o.seed_value = parse_seed(o.seed);  // a bad seed fails before the model loads
    if (o.log_disable) setenv("KDSL_LOG", "off", 1);  // before anything logs: the level is read once
    if (o.no_mmap) models::set_file_loading(models::FileLoading::Read);
    return tools::run_tool("kdsl-run", o.model, [&] { return run(o); });
  });
}
