// kdsl_prewarm_stress_test.cpp - 32 kdsl-run / kdsl-prewarm processes on one cold cache, killed at random between injected corruptions: never a wrong token (ctest: tools_slow)
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/test_util.h"
#include "tests/tools/tool_process.h"

using kdsl::test::run_tool_process;
using kdsl::test::ToolRun;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kPrewarm = std::string(KDSL_TOOLS_DIR) + "/kdsl-prewarm";

// A child running `exe args` with its output in files; the test waits for it (or kills it).
struct Child {
  pid_t pid = -1;
  std::string out, err;
  bool prewarm = false, killed = false;
  int status = -1;
};

Child spawn(const std::string &exe, const std::vector<std::string> &args, const std::string &tag, bool prewarm) {
  Child c;
  c.prewarm = prewarm;
  c.out = kdsl::test::scratch_path("stress_" + tag + ".out"), c.err = kdsl::test::scratch_path("stress_" + tag + ".err");
  c.pid = ::fork();
  if (c.pid == 0) {
    int in = ::open("/dev/null", O_RDONLY), out = ::open(c.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600),
        err = ::open(c.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(in, 0), ::dup2(out, 1), ::dup2(err, 2);
    std::vector<char *> argv = {const_cast<char *>(exe.c_str())};
    for (const std::string &a : args) argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(exe.c_str(), argv.data());
    ::_exit(127);
  }
  return c;
}

std::vector<fs::path> entries(const fs::path &dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); ++it)
    if (it->path().extension() == ".kdslbin") out.push_back(it->path());
  return out;
}

// One injected fault in an entry file: cut short, a flipped bit, emptied, or the format version
// of another kdsl (a stale entry). Returns what it did.
std::string corrupt(const fs::path &file, std::mt19937 &rng) {
  std::string bytes = kdsl::test::read_whole(file.string());
  if (bytes.size() < 16) return "skipped (short)";
  switch (rng() % 4) {
    case 0: bytes.resize(rng() % bytes.size()); break;
    case 1: bytes[rng() % bytes.size()] ^= char(1 << (rng() % 8)); break;
    case 2: bytes.clear(); break;
    default: bytes[8] = char(bytes[8] + 1); break;  // the u32 version after the 8-byte magic
  }
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  return "corrupted";
}

}  // namespace

TEST_CASE("stress: processes sharing one cold cache, killed at random and fed corrupt entries, never print a wrong token") {
  if (!std::getenv("KDSL_SLOW_TESTS")) {
    MESSAGE("skipped: set KDSL_SLOW_TESTS=1 (ctest -L slow runs it)");
    return;
  }
  const std::string model = kdsl::test::tiny_model_file();
  const std::vector<std::string> run_args = {"-m", model, "-p", "Once upon a time", "-n", "12", "--temp", "0", "--ignore-eos"};
  fs::path own = kdsl::test::scratch_path("stress_reference_cache");
  fs::remove_all(own);
  std::vector<std::string> reference_args = run_args;
  reference_args.insert(reference_args.end(), {"--cache-dir", own.string()});
  json reference = kdsl::test::kdsl_run_json(reference_args)["generated_ids"];
  REQUIRE(reference.size() == 12);
  fs::remove_all(own);

  fs::path shared = kdsl::test::scratch_path("stress_shared_cache");
  fs::remove_all(shared);
  const uint32_t seed = kdsl_test::fresh_seed();
  CAPTURE(seed);
  std::mt19937 rng(seed);
  const int rounds = 4, per_round = 8;  // 32 processes; 8 at a time is what 2 cores finish in about a minute
  int finished = 0, killed = 0, corrupted = 0;
  for (int round = 0; round < rounds; ++round) {
    std::vector<Child> children;
    for (int i = 0; i < per_round; ++i) {
      std::string tag = std::to_string(round) + "_" + std::to_string(i);
      // One in four prewarms the same cache at the same time (a plan of its own options).
      if (i % 4 == 3)
        children.push_back(spawn(kPrewarm, {"-m", model, "--cache-dir", shared.string(), "--ctx", "64", "-b", "8", "-j", "1"}, tag, true));
      else {
        std::vector<std::string> args = run_args;
        args.insert(args.end(), {"--cache-dir", shared.string(), "--output-format", "json"});
        children.push_back(spawn(kdsl::test::kdsl_run_path, args, tag, false));
      }
    }
    // About a third are killed at a random moment of their first seconds: mid-compile, mid-store.
    auto start = std::chrono::steady_clock::now();
    std::vector<std::pair<double, size_t>> kills;
    for (size_t i = 0; i < children.size(); ++i)
      if (rng() % 3 == 0) kills.push_back({double(rng() % 3000) / 1000.0, i});
    std::sort(kills.begin(), kills.end());
    for (auto [at, i] : kills) {
      std::this_thread::sleep_until(start + std::chrono::duration<double>(at));
      if (::kill(children[i].pid, SIGKILL) == 0) children[i].killed = true;
    }
    for (Child &c : children) {
      int status = 0;
      ::waitpid(c.pid, &status, 0);
      if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && c.killed) {
        ++killed;
        continue;
      }
      c.killed = false;  // it had finished before the signal
      ++finished;
      std::string out = kdsl::test::read_whole(c.out), err = kdsl::test::read_whole(c.err);
      CAPTURE(round);
      CAPTURE(err);
      REQUIRE(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 0);
      if (!c.prewarm && WEXITSTATUS(status) == 0) CHECK(json::parse(out)["generated_ids"] == reference);
    }
    for (const Child &c : children) fs::remove(c.out), fs::remove(c.err);
    // Between rounds, faults in up to 4 entries the next round's processes may meet.
    std::vector<fs::path> files = entries(shared);
    std::shuffle(files.begin(), files.end(), rng);
    for (size_t i = 0; i < files.size() && i < 4; ++i) corrupted += corrupt(files[i], rng) == "corrupted";
  }
  MESSAGE(finished, " processes finished, ", killed, " killed, ", corrupted, " entries corrupted");
  CHECK(finished > 0);
  // After it all, a run is still right, and any entry it met that was bad is gone.
  std::vector<std::string> args = run_args;
  args.insert(args.end(), {"--cache-dir", shared.string()});
  CHECK(kdsl::test::kdsl_run_json(args)["generated_ids"] == reference);
  fs::remove_all(shared);
}

TEST_CASE("stress: a cache folder that cannot be written degrades to compiling in memory, with one warning") {
  const std::string model = kdsl::test::tiny_model_file();
  // A path running through a regular file: no process can create it, whoever runs the test
  // (root writes into a read-only folder regardless, so permissions would not do).
  fs::path blocker = kdsl::test::scratch_path("stress_not_a_folder");
  fs::remove_all(blocker);
  std::ofstream(blocker) << "a file";
  const std::string cache = (blocker / "cache").string();
  ToolRun r = run_tool_process(kdsl::test::kdsl_run_path,
                               {"-m", model, "-p", "Once upon a time", "-n", "4", "--temp", "0", "--output-format", "json", "--cache-dir", cache}, 120);
  CAPTURE(r.err);
  REQUIRE(r.status == 0);
  CHECK(json::parse(r.out)["summary"]["kernels_compiled"].get<int>() > 0);
  size_t warnings = 0;
  for (size_t at = r.err.find("[kdsl warn]"); at != std::string::npos; at = r.err.find("[kdsl warn]", at + 1)) ++warnings;
  CHECK(warnings == 1);
  // kdsl-prewarm cannot do its job there: it says so and fails.
  ToolRun p = run_tool_process(kPrewarm, {"-m", model, "--ctx", "32", "-b", "4", "--cache-dir", cache}, 300);
  CAPTURE(p.err);
  CHECK(p.status == 1);
  CHECK(p.err.find("could not be stored") != std::string::npos);
  fs::remove(blocker);
}
