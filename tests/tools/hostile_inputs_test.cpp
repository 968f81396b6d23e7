// hostile_inputs_test.cpp - command lines and model files an attacker or an unlucky user gives the tools: each ends with
// status 1 and one line, within a time and memory bound; never a hang, a signal or an uncaught exception
#include <doctest/doctest.h>

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "models/gguf/gguf_file.h"
#include "models/gguf/gguf_writer.h"
#include "models/synth/synth_model.h"
#include "runtime/thread_pool.h"
#include "src/tools/tool_main.h"
#include "tests/tools/tool_process.h"

using namespace kdsl::models;
using kdsl::test::run_tool_process;
using kdsl::test::ToolRun;

namespace {

const std::string &kRun = kdsl::test::kdsl_run_path;
const std::string kSynth = std::string(KDSL_TEST_BINARY_DIR) + "/models/kdsl-synth";

#if defined(__SANITIZE_ADDRESS__)
constexpr long kMaxRssKb = 1500 * 1024;  // ASan's shadow memory and quarantine
constexpr bool kSanitized = true;
#else
constexpr long kMaxRssKb = 400 * 1024;
constexpr bool kSanitized = false;
#endif

// A user error, as the issue asks of every hostile input: exit status 1, one line on stderr
// holding `tool: error: ` and `part`, within the time limit and a memory bound.
void check_refused(const ToolRun &r, const std::string &tool, const std::string &part) {
  kdsl::test::expect_user_error(r, tool, part);
  CHECK(r.peak_rss_kb < kMaxRssKb);
}

const std::string &tiny_model() { return kdsl::test::tiny_model_file(); }

}  // namespace

TEST_CASE("hostile: kdsl-run refuses a thread count past the CPUs, and a negative context") {
  check_refused(run_tool_process(kRun, {"-m", tiny_model(), "-p", "x", "-n", "1", "--threads", "1000000"}), "kdsl-run", "--threads 1000000");
  int too_many = kdsl::runtime::available_cpus() + 1;
  check_refused(run_tool_process(kRun, {"-m", tiny_model(), "-p", "x", "-n", "1", "--threads", std::to_string(too_many)}), "kdsl-run",
                "more threads than CPUs");
  check_refused(run_tool_process(kRun, {"-m", tiny_model(), "-p", "x", "--ctx", "-5"}), "kdsl-run", "--ctx");
}

TEST_CASE("hostile: kdsl-run refuses a context that overflows or cannot fit in memory") {
  check_refused(run_tool_process(kRun, {"-m", tiny_model(), "-p", "x", "-n", "1", "--ctx", "2147483647"}), "kdsl-run", "expected 1 to");
  // 8 layers of 8 KV heads of 64: 32 KiB of KV cache a token, so 2^24 tokens are 512 GiB.
  SynthConfig c = synth_preset("tiny");
  c.hparams.n_embd = 512, c.hparams.n_layer = 8, c.hparams.n_head = 8, c.hparams.n_head_kv = 8, c.hparams.n_ff = 64;
  c.weight_type = GgmlType::Q4_0;
  std::string wide = kdsl::test::scratch_path("hostile_wide_kv.gguf");
  write_synthetic_model(c, wide);
  check_refused(run_tool_process(kRun, {"-m", wide, "-p", "x", "-n", "1", "--ctx", "16777216"}), "kdsl-run", "GB of free memory");
}

TEST_CASE("hostile: kdsl-run reads a prompt file with a bound, and not a directory") {
  check_refused(run_tool_process(kRun, {"-m", tiny_model(), "-f", "/dev/zero", "-n", "1"}, 60), "kdsl-run", "larger than 16 MiB");
  check_refused(run_tool_process(kRun, {"-m", tiny_model(), "-f", std::filesystem::temp_directory_path().string(), "-n", "1"}), "kdsl-run",
                "found a directory");
  check_refused(run_tool_process(kRun, {"-m", tiny_model(), "-f", "/nonexistent/prompt.txt"}), "kdsl-run", "/nonexistent/prompt.txt");
  std::string prompt = kdsl::test::scratch_path("hostile_prompt.txt");
  std::ofstream(prompt) << "Once";
  check_refused(run_tool_process(kRun, {"-m", tiny_model(), "-f", prompt, "-p", "twice"}), "kdsl-run", "excludes");
}

TEST_CASE("hostile: kdsl-run takes a seed that means what was typed") {
  for (const char *seed : {"-1", "18446744073709551616", "1e3", "0x10", ""}) {
    CAPTURE(seed);
    check_refused(run_tool_process(kRun, {"-m", tiny_model(), "-p", "x", "-n", "1", "--seed", seed}), "kdsl-run", "--seed");
  }
  ToolRun ok = run_tool_process(kRun, {"-m", tiny_model(), "-p", "x", "-n", "2", "--seed", "18446744073709551615", "--output-format", "json"});
  CAPTURE(ok.err);
  CHECK(ok.status == 0);
}

TEST_CASE("hostile: kdsl-run stops on non-finite logits, naming the step") {
  // token_embd rows of NaN: the prompt's hidden state, and so its logits, are NaN. Before,
  // greedy decoding printed one token forever and exited 0.
  std::string path = kdsl::test::scratch_path("hostile_nan.gguf");
  write_synthetic_model(synth_preset("tiny"), path);
  uint64_t offset = 0, bytes = 0;
  {
    GgufFile f(path);
    const auto &t = f.tensor("token_embd.weight");
    REQUIRE(t.type == GgmlType::F32);
    offset = f.data_offset() + t.offset, bytes = t.bytes;
  }
  std::vector<float> nan(bytes / sizeof(float), std::numeric_limits<float>::quiet_NaN());
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(std::streamoff(offset));
  f.write(reinterpret_cast<const char *>(nan.data()), std::streamsize(bytes));
  f.close();
  ToolRun r = run_tool_process(kRun, {"-m", path, "-p", "hello", "-n", "4", "--temp", "0", "--output-format", "json"});
  check_refused(r, "kdsl-run", "logits are not finite (NaN");
  CHECK(r.err.find("after the prompt") != std::string::npos);
}

TEST_CASE("hostile: kdsl-synth refuses shapes it cannot write or kdsl-run cannot load") {
  std::string out = kdsl::test::scratch_path("hostile_synth.gguf");
  std::filesystem::remove(out);
  check_refused(run_tool_process(kSynth, {"-o", out, "--dim", "1073741824"}), "kdsl-synth", "embedding length (dim) must be 1 to");
  check_refused(run_tool_process(kSynth, {"-o", out, "--layers", "100000000"}), "kdsl-synth", "layer count must be 1 to");
  check_refused(run_tool_process(kSynth, {"-o", out, "--head-dim", "7"}), "kdsl-synth", "must be even");
  check_refused(run_tool_process(kSynth, {"-o", out, "--dim", "-64"}), "kdsl-synth", "found -64");
  check_refused(run_tool_process(kSynth, {"-o", out, "--frobnicate"}), "kdsl-synth", "--frobnicate");
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("hostile: a model file truncated under its memory map ends with one line, not a core dump") {
  std::string path = kdsl::test::scratch_path("hostile_sigbus.bin");
  std::vector<char> page(size_t(::sysconf(_SC_PAGESIZE)) * 4, 'x');
  std::ofstream(path, std::ios::binary).write(page.data(), std::streamsize(page.size()));
  pid_t pid = ::fork();
  if (pid == 0) {
    std::string err = kdsl::test::scratch_path("hostile_sigbus.err");
    int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ::dup2(fd, 2);
    kdsl::tools::report_sigbus_for("kdsl-run", path);
    int file = ::open(path.c_str(), O_RDWR);
    auto *p = static_cast<volatile char *>(::mmap(nullptr, page.size(), PROT_READ, MAP_SHARED, file, 0));
    if (::ftruncate(file, 0) != 0) ::_exit(3);
    char c = p[page.size() - 1];  // past the end of the file now: SIGBUS
    ::_exit(c == 'x' ? 4 : 5);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 1);
  std::string err = kdsl::test::read_whole(kdsl::test::scratch_path("hostile_sigbus.err"));
  CHECK(err == "kdsl-run: error: " + path + " was truncated or became unreadable while it was in use (SIGBUS on its memory map)\n");
}

TEST_CASE("hostile: a thread pool the system refuses threads runs with those it got") {
  // Before, a failed std::thread in the constructor destroyed the condition variable the
  // started workers waited on: kdsl-run hung at 0% CPU. A child process with an address-space
  // limit that leaves room for a few 8 MiB thread stacks shows the pool coming up short.
  if (kSanitized) return;  // ASan reserves terabytes of address space up front
  pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(60);  // a pool that hangs ends the child, not the suite
    long pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    rlim_t now = rlim_t(pages) * rlim_t(::sysconf(_SC_PAGESIZE));
    struct rlimit limit = {now + (64u << 20), now + (64u << 20)};
    ::setrlimit(RLIMIT_AS, &limit);
    try {
      kdsl::runtime::ThreadPool pool(200);
      if (pool.size() >= 200 || pool.size() < 1) ::_exit(3);
      std::atomic<int64_t> sum{0};
      pool.parallel_for(1000, [&](int64_t b, int64_t e) { sum += e - b; });
      ::_exit(sum == 1000 ? 0 : 4);
    } catch (...) {
      ::_exit(5);
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_THROWS_AS(kdsl::runtime::ThreadPool(-1), kdsl::Error);
  CHECK_THROWS_AS(kdsl::runtime::ThreadPool(kdsl::runtime::kMaxPoolThreads + 1), kdsl::Error);
}

TEST_CASE("hostile: the tools' top-level handler tells user errors, memory and bugs apart") {
  using kdsl::tools::run_tool;
  CHECK(run_tool("t", "f.gguf", [] { return 0; }) == 0);
  CHECK(run_tool("t", "f.gguf", []() -> int { throw kdsl::Error("bad field"); }) == 1);
  CHECK(run_tool("t", "f.gguf", []() -> int { throw std::bad_alloc(); }) == 1);
  CHECK(run_tool("t", "f.gguf", []() -> int { throw std::out_of_range("vector::at"); }) == 2);
  CHECK(run_tool("t", "f.gguf", []() -> int { throw 42; }) == 2);
}
