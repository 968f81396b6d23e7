// hostile_files_test.cpp - kdsl-tokenize on crafted GGUFs: one line, exit status 1, bounded memory
#include <doctest/doctest.h>

#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "models/gguf/gguf_writer.h"
#include "shared_models.h"

extern char **environ;

using namespace kdsl::models;

namespace {

struct Outcome {
  int status = -1;  // the exit status, or 128 + the signal
  std::string output;  // stdout and stderr together
  long max_rss_kb = 0;
};

// Runs `argv` without a shell, so the peak RSS wait4 reports is the tool's own.
Outcome spawn(const std::vector<std::string> &argv) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::vector<char *> args;
  for (const std::string &a : argv) args.push_back(const_cast<char *>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  Outcome o;
  char buffer[4096];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) o.output.append(buffer, size_t(n));
  close(fds[0]);
  REQUIRE(rc == 0);
  int status = 0;
  struct rusage usage {};
  REQUIRE(wait4(pid, &status, 0, &usage) == pid);
  o.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  o.max_rss_kb = usage.ru_maxrss;
  return o;
}

std::optional<std::string> tokenize_tool() {
  std::string path = std::string(KDSL_TEST_BINARY_DIR) + "/models/kdsl-tokenize";
  if (std::filesystem::exists(path)) return path;
  MESSAGE("skipped: " << path << " is not built");
  return std::nullopt;
}

// One line ending in a newline, starting with the tool's name, holding no escape byte.
void check_one_clean_line(const Outcome &o, const std::string &expected_part) {
  CHECK(o.status == 1);
  CHECK(o.output.starts_with("kdsl-tokenize: error: "));
  CHECK(o.output.find('\n') == o.output.size() - 1);
  CHECK(o.output.find('\x1b') == std::string::npos);
  CHECK_MESSAGE(o.output.find(expected_part) != std::string::npos, o.output);
}

}  // namespace

TEST_CASE("hostile files: kdsl-tokenize refuses a malformed byte token and escaped names with one line, status 1") {
  auto exe = tokenize_tool();
  if (!exe) return;
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>", "<0xZZ>", "a"};
  GgufWriter w;
  w.set("tokenizer.ggml.model", "llama");
  w.set("tokenizer.ggml.tokens", GgufValue::array(tokens));
  w.set("tokenizer.ggml.scores", GgufValue::array(std::vector<float>(5, 0.0f)));
  w.set("tokenizer.ggml.token_type", GgufValue::array(std::vector<int32_t>{2, 3, 3, 6, 1}));
  std::string bad_byte = kdsl::test::scratch_path("bad_byte_token.gguf");
  w.write(bad_byte);
  check_one_clean_line(spawn({*exe, "-m", bad_byte, "--ids", "3"}),
                       bad_byte + ": tokenizer: token 3 '<0xZZ>' has type byte but is not spelled <0x00> .. <0xFF>");

  w.set("tokenizer.ggml.model", "\x1b]0;pwned\x07\x1b[2J");
  std::string bad_model = kdsl::test::scratch_path("bad_tokenizer_model.gguf");
  w.write(bad_model);
  check_one_clean_line(spawn({*exe, "-m", bad_model, "hello"}), "tokenizer '\\x1b]0;pwned\\x07\\x1b[2J' is not supported");
}

TEST_CASE("hostile files: a 64 MiB metadata array costs kdsl-tokenize about its size, not 40 times it") {
  auto exe = tokenize_tool();
  if (!exe) return;
  // Written a chunk at a time, so this process stays small: the peak RSS wait4 reports for a
  // spawned child also counts this process's own peak (exec records the old memory map's).
  const uint64_t n = uint64_t(64) << 20;
  std::string path = kdsl::test::scratch_path("big_array.gguf");
  {
    std::ofstream out(path, std::ios::binary);
    auto put = [&](auto v) { out.write(reinterpret_cast<const char *>(&v), sizeof v); };
    put(uint32_t(0x46554747)), put(uint32_t(3)), put(uint64_t(0)), put(uint64_t(1));  // "GGUF" v3, 0 tensors, 1 key
    put(uint64_t(3)), out.write("big", 3), put(uint32_t(GgufValueType::Array));
    put(uint32_t(GgufValueType::U8)), put(n);
    std::vector<char> chunk(1 << 20, 7);
    for (uint64_t i = 0; i < n; i += chunk.size()) out.write(chunk.data(), std::streamsize(chunk.size()));
  }
  struct rusage self {};
  getrusage(RUSAGE_SELF, &self);
  Outcome o = spawn({*exe, "-m", path, "hello"});
  std::filesystem::remove(path);
  // The whole file is parsed before the missing tokenizer is noticed.
  check_one_clean_line(o, path + ": metadata 'tokenizer.ggml.model' is missing");
  // The mapped file and one copy of the elements, plus the program itself; 40 bytes an
  // element would be 2.6 GB. AddressSanitizer's shadow memory and quarantine add their share.
#if defined(__SANITIZE_ADDRESS__)
  long bound_kb = long(10 * n / 1024) + 128 * 1024;
#else
  long bound_kb = long(3 * n / 1024) + 64 * 1024;
#endif
  bound_kb = std::max(bound_kb, self.ru_maxrss + 32 * 1024);  // this process's own peak is counted too
  CHECK_MESSAGE(o.max_rss_kb < bound_kb, "peak RSS " << o.max_rss_kb << " kB, this process's " << self.ru_maxrss << " kB");
}
