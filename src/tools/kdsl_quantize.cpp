// kdsl_quantize.cpp - kdsl-quantize: a GGUF model requantized to one weight type or one of llama.cpp's mixes, as llama-quantize does it
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <kdsl/error.h>

#include <filesystem>
#include <optional>
#include <string>

#include "models/gguf/importance_matrix.h"
#include "models/gguf/quantize_model.h"
#include "src/tools/tool_main.h"

using namespace kdsl::models;

int main(int argc, char **argv) {
  CLI::App app{"kdsl-quantize: rewrites a GGUF model (F32, F16 or BF16, or any type kdsl reads) in a quantized type or mix"};
  std::string in, out, type, imatrix_path;
  bool quiet = false;
  QuantizeOptions options;
  app.add_option("input", in, "the GGUF model to read")->required();
  app.add_option("output", out, "the GGUF file to write (a temporary file renamed into place)")->required();
  app.add_option("type", type, "the type: " + quantize_target_names())->required();
  app.add_flag("--pure", options.pure, "every 2-D tensor in TYPE: no Q6_K classifier, no _M mix rules");
  app.add_option("--imatrix", imatrix_path,
                 "an importance matrix (kdsl-imatrix's or llama-imatrix's, GGUF or .dat): each matrix's rounding error weighed by how much "
                 "the activations use its columns");
  app.add_flag("-q,--quiet", quiet, "no per-tensor progress lines");
  app.add_option("-t,--threads", options.threads, "threads sharing each tensor's rows (default 0: one per CPU)")->check(CLI::NonNegativeNumber);
  if (int status = kdsl::tools::parse_command_line(app, "kdsl-quantize", argc, argv); status >= 0) return status;

  return kdsl::tools::run_tool("kdsl-quantize", in, [&] {
    std::optional<QuantizeTarget> target = parse_quantize_target(type);
    if (!target) throw kdsl::Error(fmt::format("type '{}' is not one kdsl-quantize writes (expected one of {})", type, quantize_target_names()));
    if (std::filesystem::exists(out) && std::filesystem::equivalent(in, out))
      throw kdsl::Error(fmt::format("output {} is the input: write to another file", out));
    std::optional<ImportanceMatrix> imatrix;
    if (!imatrix_path.empty()) {
      imatrix = ImportanceMatrix::load(imatrix_path);
      options.imatrix = &*imatrix;
      options.imatrix_file = imatrix_path;
      fmt::print(stderr, "kdsl-quantize: {}: {} entries from {} chunks of {} tokens\n", imatrix_path, imatrix->entries.size(), imatrix->chunk_count,
                 imatrix->chunk_size);
    }
    kdsl::tools::report_sigbus_for("kdsl-quantize", in);
    QuantizeSummary s = quantize_model(in, out, *target, options, [&](const QuantizeProgress &p) {
      if (quiet) return;
      fmt::print(stderr, "[{:4}/{:4}] {:36} {:>16} {:>5} -> {}{}\n", p.index + 1, p.count, p.tensor->name, p.tensor->shape_string(),
                 ggml_type_traits(p.tensor->type).ggml_name, ggml_type_traits(p.to).ggml_name, p.weighted ? " (imatrix)" : "");
    });
    fmt::print("kdsl-quantize: wrote {} ({}{}): {} tensors ({} requantized{}), {:.2f} MiB -> {:.2f} MiB, {:.2f} bits per weight, {:.2f} s\n", out,
               target->name, options.pure ? ", pure" : "", s.tensors, s.quantized,
               imatrix ? fmt::format(", {} with the importance matrix", s.weighted) : std::string(), double(s.bytes_in) / (1 << 20),
               double(s.bytes_out) / (1 << 20), s.bits_per_weight(), s.seconds);
    if (!target->llama_ftype) fmt::print("kdsl-quantize: note: {} is kdsl's own type: llama.cpp and gguf-py cannot read {}\n", target->name, out);
    return 0;
  });
}
