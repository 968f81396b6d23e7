// kdsl-perplexity - perplexity of a model over a text file, and the KL divergence of a quantized model from its base (llama.cpp's method)
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <kdsl/kdsl.h>

#include <chrono>
#include <optional>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "models/eval/logprob_file.h"
#include "models/engine/model_tokenizer.h"
#include "models/eval/perplexity.h"
#include "models/spec/self_draft.h"
#include "models/tokenizer/tokenizer.h"
#include "src/tools/eval_inputs.h"
#include "src/tools/tool_main.h"

using namespace kdsl;
using namespace kdsl::models;

namespace {

struct Options {
  std::string model, tokenizer_path, text_file, kld_base, requantize, imatrix, device = "cpu";
  bool kl_divergence = false, json = false;
  int context = 512, chunks = 0, threads = 0;
};

int run(const Options &o) {
  auto start = std::chrono::steady_clock::now();
  Device dev = tools::eval_device(o.device, o.threads);
  ModelWeights loaded = load_model_weights(o.model);
  tools::report_sigbus_for("kdsl-perplexity", o.model);
  std::unique_ptr<Tokenizer> tok = open_model_tokenizer(loaded, o.model, o.tokenizer_path);
  // --requantize: the model's matrices requantized in memory (as a self-draft is), so a model
  // with no quantized file (a llama2.c checkpoint) can be measured against itself.
  std::optional<ModelWeights> requantized;
  std::optional<ImportanceMatrix> imatrix;
  if (!o.imatrix.empty()) {
    if (o.requantize.empty()) throw Error("--imatrix weighs --requantize's rounding: give --requantize TYPE too");
    imatrix = ImportanceMatrix::load(o.imatrix);
  }
  if (!o.requantize.empty()) {
    requantized = self_draft_weights(loaded, SelfDraftOptions{.type = parse_self_draft_type("--requantize", o.requantize),
                                                              .imatrix = imatrix ? &*imatrix : nullptr});
  }
  const ModelWeights &model = requantized ? *requantized : loaded;
  // Each chunk starts with BOS in place of its first token, as llama.cpp does.
  const auto [tokens, bos] = tools::tokenize_text_file(*tok, o.text_file);
  PerplexityOptions po{.context = o.context, .max_chunks = o.chunks, .bos = bos};

  std::unique_ptr<LogProbFile> base;
  if (o.kl_divergence) {
    if (o.kld_base.empty()) throw Error("--kl-divergence compares with the log-probabilities saved by a run with --kl-divergence-base FILE: give that FILE");
    base = std::make_unique<LogProbFile>(o.kld_base);
  }
  int chunks = std::min<int>(int(tokens.size() / size_t(o.context)), o.chunks > 0 ? o.chunks : INT32_MAX);
  if (chunks == 0)
    throw Error(fmt::format("{}: the text has {} tokens, fewer than one chunk of {} (lower -c or give more text)", o.text_file, tokens.size(), o.context));
  Engine engine(model, dev, EngineOptions{.context = o.context, .max_batch = std::min(o.context, 512), .max_logit_rows = po.scored_rows()});
  std::unique_ptr<LogProbWriter> save;
  if (!o.kld_base.empty() && !o.kl_divergence)
    save = std::make_unique<LogProbWriter>(o.kld_base, LogProbHeader{uint32_t(engine.vocab()), uint32_t(o.context), uint32_t(chunks), uint32_t(po.scored_rows())},
                                           std::span<const int>(tokens).first(size_t(chunks) * size_t(o.context)));
  bool tty = !o.json && ::isatty(STDERR_FILENO);
  if (!o.json)
    fmt::print("kdsl-perplexity: {}: {} tokens, {} chunks of {}, {} scored per chunk\n", o.model, tokens.size(), chunks, o.context,
               po.scored_rows());
  PerplexityResult r = perplexity(engine, tokens, po, save.get(), base.get(), [&](int done, int total) {
    if (tty) fmt::print(stderr, "\r[{}/{}]", done, total), std::fflush(stderr);
  });
  if (tty) fmt::print(stderr, "\n");
  if (save) save->finish();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  nlohmann::json j = {{"model", o.model}, {"requantize", o.requantize}, {"imatrix", o.imatrix}, {"tokens", tokens.size()}, {"chunks", r.chunks}, {"context", o.context}, {"scored", r.scored},
                      {"ppl", r.perplexity()}, {"ppl_stderr", r.perplexity_stderr()}, {"seconds", seconds}};
  if (!o.json) fmt::print("Final estimate: PPL = {:.4f} +/- {:.5f} ({} tokens scored, {:.1f} s)\n", r.perplexity(), r.perplexity_stderr(), r.scored, seconds);
  if (save && !o.json) fmt::print("saved the log-probabilities to {}\n", o.kld_base);
  if (base) {
    DivergenceSummary d = summarize(r.divergence);
    double base_ppl = std::exp(*r.base_nll);
    j.update({{"base_ppl", base_ppl}, {"ln_ppl_ratio", r.nll - *r.base_nll}, {"kld_mean", d.mean}, {"kld_mean_stderr", d.mean_stderr},
              {"kld_median", d.median}, {"kld_p99", d.p99}, {"kld_max", d.max}, {"top1_agreement", d.top1_agreement}});
    if (!o.json) {
      fmt::print("PPL(base)            = {:.4f}\n", base_ppl);
      fmt::print("ln(PPL(Q)/PPL(base)) = {:.6f}\n", r.nll - *r.base_nll);
      fmt::print("Mean KLD   = {:.6f} +/- {:.6f}\n", d.mean, d.mean_stderr);
      fmt::print("Median KLD = {:.6f}\n99.0% KLD  = {:.6f}\nMax KLD    = {:.6f}\n", d.median, d.p99, d.max);
      fmt::print("Same top-1 = {:.3f}%\n", 100 * d.top1_agreement);
    }
  }
  if (o.json) fmt::print("{}\n", j.dump(2));
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kdsl-perplexity: perplexity over a text, and KL divergence against a base model's saved log-probabilities (llama.cpp's method)"};
  Options o;
  app.add_option("-m,--model", o.model, "GGUF or llama2.c model")->required();
  app.add_option("-z,--tokenizer", o.tokenizer_path, "llama2.c tokenizer.bin (for a llama2.c model)");
  app.add_option("-f,--file", o.text_file, "the text to score")->required();
  // The scored half runs as one pass of at most 1024 rows of logits (EngineOptions::max_logit_rows).
  app.add_option("-c,--ctx-size", o.context, "tokens per chunk (4 to 2050); the second half of each is scored")->check(CLI::Range(4, 2050));
  app.add_option("--chunks", o.chunks, "score at most this many chunks (0: all)")->check(CLI::NonNegativeNumber);
  app.add_option("--kl-divergence-base", o.kld_base,
                 "without --kl-divergence: save this model's log-probabilities to FILE; with it: compare with those saved in FILE");
  app.add_option("--requantize", o.requantize, "score the model's matrices requantized in memory to TYPE (" + self_draft_type_names() + ")");
  app.add_option("--imatrix", o.imatrix, "with --requantize: weigh the rounding by this importance matrix (kdsl-imatrix's or llama-imatrix's)");
  app.add_flag("--kl-divergence", o.kl_divergence, "report the KL divergence from the log-probabilities in --kl-divergence-base FILE");
  app.add_option("-t,--threads", o.threads, "CPU threads (0: all cores)")->check(CLI::NonNegativeNumber);
  app.add_option("--device", o.device, "cpu or cuda");
  app.add_flag("--json", o.json, "print the figures as JSON");
  if (int status = tools::parse_command_line(app, "kdsl-perplexity", argc, argv); status >= 0) return status;
  return tools::run_tool("kdsl-perplexity", o.model, [&] { return run(o); });
}
