// llama_bench_reference.cpp - llama-bench run as a child process (argv, no shell) and its JSON report read back
#include "src/tools/llama_bench_reference.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <kdsl/error.h>

namespace kdsl::tools {

namespace {

using nlohmann::json;

// The end of a child's stderr: enough to show its own error, not its whole log.
std::string tail_of(const std::string &text, size_t chars = 600) {
  std::string t = text.size() > chars ? "..." + text.substr(text.size() - chars) : text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

double best_rate(const json &test, const std::string &source) {
  if (test.contains("samples_ts") && test["samples_ts"].is_array() && !test["samples_ts"].empty()) {
    double best = 0;
    for (const json &s : test["samples_ts"]) {
      if (!s.is_number()) throw Error(fmt::format("{}: samples_ts: expected numbers, found {}", source, s.dump()));
      best = std::max(best, s.get<double>());
    }
    return best;
  }
  if (!test.contains("avg_ts") || !test["avg_ts"].is_number())
    throw Error(fmt::format("{}: a test without avg_ts or samples_ts (expected llama-bench's -o json fields): {}", source, test.dump().substr(0, 200)));
  return test["avg_ts"].get<double>();
}

}  // namespace

LlamaBenchFigures parse_llama_bench_json(const std::string &text, const std::string &source) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error &e) {
    throw Error(fmt::format("{}: expected llama-bench's JSON report (-o json), found text that is not JSON ({}): '{}'", source, e.what(),
                            tail_of(text, 200)));
  }
  if (!doc.is_array()) throw Error(fmt::format("{}: expected a JSON array of llama-bench tests, found a JSON {}", source, doc.type_name()));
  LlamaBenchFigures out;
  for (const json &test : doc) {
    if (!test.is_object() || !test.contains("n_prompt") || !test.contains("n_gen") || !test["n_prompt"].is_number_integer() ||
        !test["n_gen"].is_number_integer())
      throw Error(fmt::format("{}: expected each test to have integer n_prompt and n_gen, found {}", source, test.dump().substr(0, 200)));
    const int64_t n_prompt = test["n_prompt"].get<int64_t>(), n_gen = test["n_gen"].get<int64_t>();
    // pp tests generate nothing and tg tests start from an empty context; a mixed pg test
    // measures neither figure alone, so it is not compared.
    if (n_prompt > 0 && n_gen == 0) out.prompt_tps = std::max(out.prompt_tps, best_rate(test, source));
    if (n_gen > 0 && n_prompt == 0) out.decode_tps = std::max(out.decode_tps, best_rate(test, source));
  }
  return out;
}

LlamaBenchFigures run_llama_bench(const std::string &binary, const std::string &model, int threads, int gpu_layers, const std::string &cache_type,
                                  int prompt_tokens, int decode_tokens, int repetitions) {
  if (::access(binary.c_str(), X_OK) != 0)
    throw Error(fmt::format("--llama-bench '{}': expected an executable llama-bench binary, found {}", binary,
                            std::filesystem::exists(binary) ? "a file that is not executable" : "no such file"));
  std::vector<std::string> args = {binary, "-m", model, "-t", std::to_string(threads), "-ngl", std::to_string(gpu_layers), "-ctk", cache_type, "-ctv",
                                   cache_type, "-p", std::to_string(prompt_tokens), "-n", std::to_string(decode_tokens), "-r", std::to_string(repetitions),
                                   "-o", "json"};
  // stdout is the report; stderr (llama.cpp's log) goes to a file kept only for error messages.
  std::string out_path = (std::filesystem::temp_directory_path() / fmt::format("kdsl-llama-bench-{}.out", ::getpid())).string();
  std::string err_path = out_path.substr(0, out_path.size() - 4) + ".err";
  pid_t pid = ::fork();
  if (pid < 0) throw Error(fmt::format("--llama-bench '{}': fork failed: {}", binary, std::strerror(errno)));
  if (pid == 0) {
    int in = ::open("/dev/null", O_RDONLY), out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600),
        err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (in < 0 || out < 0 || err < 0) ::_exit(126);
    ::dup2(in, 0), ::dup2(out, 1), ::dup2(err, 2);
    std::vector<char *> argv;
    for (std::string &a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  auto slurp = [](const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  };
  const std::string out = slurp(out_path), err = slurp(err_path);
  std::filesystem::remove(out_path), std::filesystem::remove(err_path);
  const std::string command = fmt::format("{} -m {} -t {} -ngl {} -ctk {} -ctv {} -p {} -n {} -r {} -o json", binary, model, threads, gpu_layers, cache_type,
                                          cache_type, prompt_tokens, decode_tokens, repetitions);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error(fmt::format("--llama-bench: '{}' {}; its stderr ends: '{}'", command,
                            WIFEXITED(status) ? fmt::format("exited with status {}", WEXITSTATUS(status))
                                              : fmt::format("was ended by signal {}", WTERMSIG(status)),
                            tail_of(err)));
  LlamaBenchFigures figures = parse_llama_bench_json(out, fmt::format("--llama-bench: the output of '{}'", command));
  if ((prompt_tokens > 0 && figures.prompt_tps <= 0) || (decode_tokens > 0 && figures.decode_tps <= 0))
    throw Error(fmt::format("--llama-bench: '{}' reported no {} test (expected pp{} and tg{} rows); its stderr ends: '{}'", command,
                            prompt_tokens > 0 && figures.prompt_tps <= 0 ? "prompt" : "generation", prompt_tokens, decode_tokens, tail_of(err)));
  return figures;
}

}  // namespace kdsl::tools
