// tool_process.h - runs a command-line tool as a child process under a time limit, measuring its exit, output and peak memory; the tools' test model
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "models/synth/synth_model.h"
#include "tests/models/shared_models.h"

namespace kdsl::test {

struct ToolRun {
  int status = -1;        // exit status, -1 when it ended by a signal or was killed
  int signal = 0;         // the signal that ended it, if any
  bool timed_out = false; // killed at the time limit
  long peak_rss_kb = 0;   // the child's peak resident memory
  std::string out, err;   // stdout, stderr

  // The lines of stderr, for "one line" checks.
  size_t error_lines() const {
    size_t lines = 0;
    for (char c : err) lines += c == '\n';
    return lines + (!err.empty() && err.back() != '\n');
  }
};

inline std::string read_whole(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Runs `exe args...` with stdin from /dev/null, killing it (and its process group) after
// `seconds`. A hang or a crash shows in the result rather than stalling or ending the suite.
inline ToolRun run_tool_process(const std::string &exe, const std::vector<std::string> &args, double seconds = 60,
                                const std::vector<std::string> &env = {}) {
  static int counter = 0;
  std::string tag = std::to_string(::getpid()) + "_" + std::to_string(counter++);
  std::string out_path = scratch_path("tool_" + tag + ".out"), err_path = scratch_path("tool_" + tag + ".err");
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    int in = ::open("/dev/null", O_RDONLY), out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600),
        err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(in, 0), ::dup2(out, 1), ::dup2(err, 2);
    for (const std::string &e : env) ::putenv(const_cast<char *>(e.c_str()));
    std::vector<char *> argv = {const_cast<char *>(exe.c_str())};
    for (const std::string &a : args) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  ToolRun r;
  int status = 0;
  struct rusage usage = {};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    pid_t done = ::wait4(pid, &status, WNOHANG, &usage);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL), ::kill(pid, SIGKILL);
      ::wait4(pid, &status, 0, &usage);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (WIFEXITED(status)) r.status = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.peak_rss_kb = usage.ru_maxrss;
  r.out = read_whole(out_path), r.err = read_whole(err_path);
  std::remove(out_path.c_str()), std::remove(err_path.c_str());
  return r;
}

// A user error as every tool reports one: status 1 and one line on stderr, starting
// "<tool>: error: " and holding `part`.
inline void expect_user_error(const ToolRun &r, const std::string &tool, const std::string &part) {
  CAPTURE(r.err);
  CHECK_FALSE(r.timed_out);
  CHECK(r.signal == 0);
  CHECK(r.status == 1);
  CHECK(r.error_lines() == 1);
  CHECK(r.err.find(tool + ": error: ") == 0);
  CHECK(r.err.find(part) != std::string::npos);
}

// The synthetic "tiny" model (dim 64, 2 layers, vocab 512), written once per test binary: the
// model the command-line cases run.
inline const std::string &tiny_model_file() {
  static const std::string path = [] {
    std::string p = scratch_path("tools_tiny.gguf");
    models::write_synthetic_model(models::synth_preset("tiny"), p);
    return p;
  }();
  return path;
}

// kdsl-run in the build tree.
inline const std::string kdsl_run_path = std::string(KDSL_TOOLS_DIR) + "/kdsl-run";

// Runs kdsl-run with `args` plus --output-format json, requires status 0, and returns the JSON.
inline nlohmann::json kdsl_run_json(std::vector<std::string> args) {
  args.insert(args.end(), {"--output-format", "json"});
  ToolRun r = run_tool_process(kdsl_run_path, args);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  return nlohmann::json::parse(r.out);
}

}  // namespace kdsl::test
