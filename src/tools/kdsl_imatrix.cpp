// kdsl-imatrix - an importance matrix from a calibration text, as llama-imatrix computes it, for kdsl-quantize --imatrix (or llama-quantize)
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <kdsl/kdsl.h>

#include <chrono>
#include <filesystem>
#include <unistd.h>

#include "models/engine/engine.h"
#include "models/engine/model_tokenizer.h"
#include "models/eval/collect_importance.h"
#include "models/tokenizer/tokenizer.h"
#include "src/tools/eval_inputs.h"
#include "src/tools/tool_main.h"

using namespace kdsl;
using namespace kdsl::models;

namespace {

struct Options {
  std::string model, tokenizer_path, text_file, out = "imatrix.gguf", device = "cpu";
  bool process_output = false;
  int context = 512, chunks = 0, threads = 0;
};

int run(const Options &o) {
  auto start = std::chrono::steady_clock::now();
  Device dev = tools::eval_device(o.device, o.threads);
  ModelWeights model = load_model_weights(o.model);
  tools::report_sigbus_for("kdsl-imatrix", o.model);
  std::unique_ptr<Tokenizer> tok = open_model_tokenizer(model, o.model, o.tokenizer_path);
  // Each chunk starts with BOS in place of its first token, as llama-imatrix does.
  const auto [tokens, bos] = tools::tokenize_text_file(*tok, o.text_file);
  if (tokens.size() < size_t(o.context))
    throw Error(fmt::format("{}: the text has {} tokens, fewer than one chunk of {} (lower -c or give more text)", o.text_file, tokens.size(), o.context));
  ImportanceOptions io{.context = o.context, .max_chunks = o.chunks, .bos = bos, .keep_output = o.process_output};
  Engine engine(model, dev,
                EngineOptions{.context = o.context, .max_batch = std::min(o.context, 512), .max_logit_rows = o.process_output ? o.context : 1});
  ImportanceMatrix matrix;
  matrix.datasets.push_back(o.text_file);
  bool tty = ::isatty(STDERR_FILENO);
  int chunks = collect_importance(engine, tokens, io, matrix, [&](int done, int total) {
    if (tty) fmt::print(stderr, "\r[{}/{}]", done, total), std::fflush(stderr);
  });
  if (tty) fmt::print(stderr, "\n");
  matrix.save(o.out);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("kdsl-imatrix: wrote {}: {} weights, {} chunks of {} tokens from {} ({} tokens), {:.1f} s\n", o.out, matrix.entries.size(), chunks,
             o.context, o.text_file, tokens.size(), seconds);
  return 0;
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kdsl-imatrix: the importance matrix of a model over a calibration text (llama-imatrix's method and GGUF file), for kdsl-quantize --imatrix"};
  Options o;
  app.add_option("-m,--model", o.model, "GGUF or llama2.c model (best the unquantized one)")->required();
  app.add_option("-z,--tokenizer", o.tokenizer_path, "llama2.c tokenizer.bin (for a llama2.c model)");
  app.add_option("-f,--file", o.text_file, "the calibration text")->required();
  app.add_option("-o,--output", o.out, "the importance matrix to write (GGUF, as llama-imatrix writes it; default imatrix.gguf)");
  app.add_option("-c,--ctx-size", o.context, "tokens per chunk (default 512)")->check(CLI::Range(1, 1 << 16));
  app.add_option("--chunks", o.chunks, "run at most this many chunks (0: all)")->check(CLI::NonNegativeNumber);
  app.add_flag("--process-output", o.process_output, "also collect the classifier's input (output.weight), as llama-imatrix's flag does");
  app.add_option("-t,--threads", o.threads, "CPU threads (0: all cores)")->check(CLI::NonNegativeNumber);
  app.add_option("--device", o.device, "cpu or cuda");
  if (int status = tools::parse_command_line(app, "kdsl-imatrix", argc, argv); status >= 0) return status;
  return tools::run_tool("kdsl-imatrix", o.model, [&] { return run(o); });
}
