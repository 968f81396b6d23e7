// tools_test.cpp - kdsl-tokenize and kdsl-synth run as a user runs them (skipped when not built)
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "models/arch/hparams.h"
#include "models/gguf/gguf_file.h"
#include "shared_models.h"

using namespace kdsl::models;

namespace {

std::optional<std::string> tool(const std::string &name) {
  std::string path = std::string(KDSL_TEST_BINARY_DIR) + "/models/" + name;
  if (std::filesystem::exists(path)) return path;
  MESSAGE("skipped: " << path << " is not built");
  return std::nullopt;
}

// Runs `command`, returning its exit status and its output (stdout and stderr).
int run(const std::string &command, std::string *output) {
  std::FILE *p = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(p != nullptr);
  char buffer[4096];
  output->clear();
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, p)) > 0;) output->append(buffer, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("tools: kdsl-tokenize prints ids and text") {
  auto exe = tool("kdsl-tokenize");
  auto llama2 = kdsl::test::shared_model("llama2-tokenizer.bin");
  auto aidreams = kdsl::test::shared_model("aidreams-tok512.bin");
  if (!exe || !llama2 || !aidreams) return;
  std::string out;
  CHECK(run(*exe + " -t " + *llama2 + " 'I believe the meaning of life is'", &out) == 0);
  CHECK(out == "1 306 4658 278 6593 310 2834 338\n");
  CHECK(run(*exe + " -t " + *aidreams + " --ids '1 303 281 269 435 447 328'", &out) == 0);
  CHECK(out == "I dreamed\n");
  CHECK(run(*exe + " -t " + *aidreams + " --no-bos --pieces 'I dreamed'", &out) == 0);
  CHECK(out.starts_with("303\t\" I\"\n"));
  CHECK(run(*exe + " -t /nonexistent/tokenizer.bin hello", &out) == 1);
  CHECK(out.find("kdsl-tokenize: error: /nonexistent/tokenizer.bin: cannot open") != std::string::npos);
  CHECK(run(*exe + " -t " + *aidreams + " --ids '1 x'", &out) == 1);
  CHECK(out == "kdsl-tokenize: error: --ids: 'x' is not a token id\n");
}

TEST_CASE("tools: kdsl-synth writes a loadable model and names bad options") {
  auto exe = tool("kdsl-synth");
  if (!exe) return;
  std::string path = kdsl::test::scratch_path("synth_tool.gguf"), out;
  CHECK(run(*exe + " -o " + path + " --arch qwen2 --dim 128 --heads 4 --kv-heads 1 --layers 3 --vocab 700 --type q8_0",
            &out) == 0);
  GgufFile f(path);
  ModelHParams h = load_hparams(f);
  CHECK(h.arch == Arch::Qwen2);
  CHECK(h.n_embd == 128);
  CHECK(h.n_head_kv == 1);
  CHECK(h.n_layer == 3);
  CHECK(h.n_vocab == 700);
  CHECK(f.tensor("blk.2.attn_q.weight").type == GgmlType::Q8_0);
  CHECK(f.tensor("blk.2.attn_q.bias").type == GgmlType::F32);
  CHECK(run(*exe + " -o " + path + " --type q9_9", &out) == 1);
  CHECK(out.find("kdsl-synth: error: --type 'q9_9' is not a tensor type") != std::string::npos);
  CHECK(run(*exe + " -o " + path + " --arch gemma", &out) == 1);
  CHECK(out.find("--arch 'gemma' is not supported") != std::string::npos);
}
