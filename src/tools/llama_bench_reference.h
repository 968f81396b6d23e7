// llama_bench_reference.h - runs a llama-bench binary on the model kdsl-bench-engine measures, for side-by-side columns in one run
#pragma once
#include <string>

namespace kdsl::tools {

// What llama-bench measured on one model. A figure is 0 where that test was not run.
// Each is the best of llama-bench's repetitions (its `samples_ts`), as kdsl-bench-engine's
// prompt figure is the best of its repeats; runs that report only `avg_ts` give that.
struct LlamaBenchFigures {
  double decode_tps = 0;  // tg<decode_tokens>: generated tokens over the time of one whole generation
  double prompt_tps = 0;  // pp<prompt_tokens>: prompt tokens over the time of one batched prefill
};

// Reads llama-bench's `-o json` output: an array of test objects with n_prompt, n_gen and
// avg_ts (samples_ts optional). `source` names where the text came from, for errors, which
// say what was expected and what was found.
LlamaBenchFigures parse_llama_bench_json(const std::string &text, const std::string &source);

// Runs `binary -m model -t threads -ngl gpu_layers -ctk cache_type -ctv cache_type
// -p prompt_tokens -n decode_tokens -r repetitions -o json` (a count of 0 leaves that test out;
// gpu_layers 0 keeps a GPU build of llama.cpp on the CPU, as kdsl's CPU figures are;
// cache_type is the KV cache's, as llama.cpp names it: f16, f32, bf16, q8_0) and parses its
// standard output. A binary that cannot be run, exits with an error or prints no usable JSON is
// an Error naming the binary, its exit status and the end of what it printed on stderr.
LlamaBenchFigures run_llama_bench(const std::string &binary, const std::string &model, int threads, int gpu_layers, const std::string &cache_type,
                                  int prompt_tokens, int decode_tokens, int repetitions);

}  // namespace kdsl::tools
