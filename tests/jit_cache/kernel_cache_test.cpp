// kernel_cache_test.cpp - the launch-time cache chain end to end: memory, disk, other processes, keys, dumps
//
// Each test uses its own kernel instance (cache_add<BLOCK> with a BLOCK no other test uses)
// and a fresh KDSL_CACHE_DIR, so no earlier compile in this process answers for it. Tests that
// need a process which has never compiled the kernel run this binary again (posix_spawn of
// /proc/self/exe) on the skipped test case "kernel cache: child process", which reports what
// happened through its exit code.
#include <doctest/doctest.h>

#include "tests/stream_capture.h"
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <xxhash.h>

#include <kdsl/kdsl.h>

#include "ir/parser.h"
#include "ir/printer.h"
#include "jit_cache/cache_key.h"
#include "tests/test_util.h"

using kdsl_test::ScopedEnv;

extern char **environ;

namespace fs = std::filesystem;
using namespace kdsl;

namespace {

template <int BLOCK>
void cache_add(Ptr<f32> x, Ptr<f32> y, Ptr<f32> out, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  auto mask = offs < n;
  store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);
}

// The same body under another name.
template <int BLOCK>
void cache_add_renamed(Ptr<f32> x, Ptr<f32> y, Ptr<f32> out, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  auto mask = offs < n;
  store(out + offs, load(x + offs, mask) + load(y + offs, mask), mask);
}

// Same name and arguments, a body that depends on a value read while tracing: two traces,
// two IRs.
int g_variant = 0;
template <int BLOCK>
void cache_variant(Ptr<f32> x, Ptr<f32> y, Ptr<f32> out, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  auto mask = offs < n;
  auto a = load(x + offs, mask);
  auto b = load(y + offs, mask);
  if (g_variant == 0) store(out + offs, a + b, mask);
  else store(out + offs, a * b, mask);
}

const Device &cpu() {
  static const Device device = Device::cpu(2);
  return device;
}

// A fresh directory, removed with its contents at the end.
class TempDir {
 public:
  explicit TempDir(const char *what) {
    path_ = fs::temp_directory_path() / fmt_name(what);
    fs::create_directories(path_);
    fs::permissions(path_, fs::perms::owner_all);  // the cache refuses a directory others may write
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path &path() const { return path_; }

 private:
  static std::string fmt_name(const char *what) {
    return std::string("kdsl-kernel-cache-test-") + what + "-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}());
  }
  fs::path path_;
};


std::vector<fs::path> files_with_suffix(const fs::path &dir, const std::string &suffix) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto &e : fs::recursive_directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(e.path());
  }
  return out;
}
std::vector<fs::path> entries(const fs::path &dir) { return files_with_suffix(dir, ".kdslbin"); }

std::vector<uint8_t> read_bytes(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const fs::path &p, const std::vector<uint8_t> &bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
}

// Rewrites the entry file at `path` with another symbol and code and a valid checksum (the
// format is in src/jit_cache/disk_cache.h): a file the cache's own checks accept.
void rewrite_entry(const fs::path &path, const std::string &symbol, const std::vector<uint8_t> &code) {
  const std::vector<uint8_t> old = read_bytes(path);
  auto get_u64 = [&](size_t at) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(old.at(at + i)) << (8 * i);
    return v;
  };
  auto put_section = [](std::vector<uint8_t> &out, const uint8_t *data, size_t n) {
    for (int i = 0; i < 8; ++i) out.push_back(uint8_t(uint64_t(n) >> (8 * i)));
    out.insert(out.end(), data, data + n);
  };
  std::vector<uint8_t> out(old.begin(), old.begin() + 12);  // magic and version
  size_t at = 12;
  for (int section = 0; section < 2; ++section) {  // key and metadata, kept
    const size_t n = get_u64(at);
    put_section(out, old.data() + at + 8, n);
    at += 8 + n;
  }
  put_section(out, reinterpret_cast<const uint8_t *>(symbol.data()), symbol.size());
  put_section(out, code.data(), code.size());
  const uint64_t checksum = XXH3_64bits(out.data(), out.size());
  for (int i = 0; i < 8; ++i) out.push_back(uint8_t(checksum >> (8 * i)));
  write_bytes(path, out);
}

// Counter changes over a stretch of the test.
struct StatsDelta {
  CacheStats before = cache_stats();
  int64_t compiled() const { return cache_stats().compiled - before.compiled; }
  int64_t memory_hits() const { return cache_stats().memory_hits - before.memory_hits; }
  int64_t disk_hits() const { return cache_stats().disk_hits - before.disk_hits; }
  int64_t launches() const { return cache_stats().launches - before.launches; }
};

// out = x + y (or x * y) on fresh inputs, ragged n; true when every element is right.
template <auto K>
bool run_and_check(const Kernel<K> &kernel, int block, int n, bool product = false) {
  std::vector<float> x(size_t(n) + 64), y(x.size()), out(x.size(), -1.0f);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 97) * 0.25f, y[i] = 3.0f - float(i % 13);
  kernel(grid((n + block - 1) / block), x.data(), y.data(), out.data(), n);
  for (size_t i = 0; i < out.size(); ++i) {
    float want = int(i) < n ? (product ? x[i] * y[i] : x[i] + y[i]) : -1.0f;  // past n: untouched
    if (out[i] != want) return false;
  }
  return true;
}

// --- child processes -------------------------------------------------------------------

constexpr const char *kChildMode = "KDSL_CACHE_TEST_CHILD";
constexpr const char *kChildGo = "KDSL_CACHE_TEST_GO";

// Exit codes of the child; success is not 0, so that a child in which the test case did not
// run at all (doctest exits 0) cannot pass.
enum ChildExit {
  kChildOk = 40,
  kChildWrongResult = 41,
  kChildNotDiskHit = 42,
  kChildNotCompiled = 43,
  kChildNeitherOrBoth = 44,
  kChildBadMode = 45,
  kChildThrew = 46,
  kChildNoGo = 47,
};

template <int BLOCK>
int child_launch(const std::string &expect) {
  StatsDelta d;
  auto kernel = compile<cache_add<BLOCK>>(cpu());
  if (!run_and_check(kernel, BLOCK, 1000)) return kChildWrongResult;
  if (expect == "disk_hit") return d.disk_hits() == 1 && d.compiled() == 0 ? kChildOk : kChildNotDiskHit;
  if (expect == "compile") return d.compiled() == 1 && d.disk_hits() == 0 ? kChildOk : kChildNotCompiled;
  if (expect == "either") return d.compiled() + d.disk_hits() == 1 ? kChildOk : kChildNeitherOrBoth;
  return kChildBadMode;
}

// Mode "<expect>:<block>"; the block picks the kernel instance.
int child_main(const std::string &mode) {
  if (const char *go = std::getenv(kChildGo)) {
    // Start together with the other children: wait for the parent's go file.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!fs::exists(go)) {
      if (std::chrono::steady_clock::now() > deadline) return kChildNoGo;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  size_t colon = mode.find(':');
  if (colon == std::string::npos) return kChildBadMode;
  std::string expect = mode.substr(0, colon);
  int block = std::atoi(mode.c_str() + colon + 1);
  switch (block) {
    case 80: return child_launch<80>(expect);
    case 96: return child_launch<96>(expect);
    case 112: return child_launch<112>(expect);
    case 240: return child_launch<240>(expect);
    case 256: return child_launch<256>(expect);
    default: return kChildBadMode;
  }
}

// Starts this test binary on the child test case with `mode` and KDSL_CACHE_DIR=cache_dir.
pid_t spawn_child(const std::string &mode, const fs::path &cache_dir, const std::string &go_file = "") {
  std::vector<std::string> env;
  for (char **e = environ; *e; ++e) {
    std::string_view v(*e);
    if (v.starts_with("KDSL_CACHE_DIR=") || v.starts_with(std::string(kChildMode) + "=") || v.starts_with(std::string(kChildGo) + "=")) continue;
    env.emplace_back(v);
  }
  env.push_back("KDSL_CACHE_DIR=" + cache_dir.string());
  env.push_back(std::string(kChildMode) + "=" + mode);
  if (!go_file.empty()) env.push_back(std::string(kChildGo) + "=" + go_file);
  std::vector<std::string> args = {"kdsl_tests", "--no-skip", "--test-case=kernel cache: child process", "--no-intro", "--no-version"};
  std::vector<char *> argv, envp;
  for (auto &a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto &e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data());
  REQUIRE_MESSAGE(rc == 0, "posix_spawn failed: ", rc);
  return pid;
}

// The child's exit code (-1 when it did not exit normally).
int wait_child(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int run_child(const std::string &mode, const fs::path &cache_dir) { return wait_child(spawn_child(mode, cache_dir)); }

}  // namespace

// Runs only in a child started by the tests below (doctest skips it otherwise).
TEST_CASE("kernel cache: child process" * doctest::skip()) {
  const char *mode = std::getenv(kChildMode);
  if (!mode) return;
  int code = kChildThrew;
  try {
    code = child_main(mode);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "kernel cache child: %s\n", e.what());
  }
  std::fflush(nullptr);
  std::_Exit(code);
}

TEST_CASE("kernel cache: the second launch is answered from memory") {
  TempDir dir("memory");
  ScopedEnv env("KDSL_CACHE_DIR", dir.path().string());
  StatsDelta d;
  auto kernel = compile<cache_add<48>>(cpu());
  CHECK(run_and_check(kernel, 48, 1000));
  CHECK(d.compiled() == 1);
  CHECK(d.disk_hits() == 0);
  CHECK(d.memory_hits() == 0);
  CHECK(entries(dir.path()).size() == 1);

  // The same kernel object keeps its specialization: no lookup at all.
  CHECK(run_and_check(kernel, 48, 1000));
  CHECK(d.compiled() == 1);
  CHECK(d.memory_hits() == 0);

  // A new kernel object traces again and finds the compiled code in memory.
  auto again = compile<cache_add<48>>(cpu());
  CHECK(run_and_check(again, 48, 777));
  CHECK(d.compiled() == 1);
  CHECK(d.memory_hits() == 1);
  CHECK(d.disk_hits() == 0);
  CHECK(d.launches() == 3);
  CHECK(entries(dir.path()).size() == 1);
}

TEST_CASE("kernel cache: another process loads the kernel from disk") {
  TempDir dir("disk");
  ScopedEnv env("KDSL_CACHE_DIR", dir.path().string());
  // The child tells a compile from a disk hit: with nothing on disk it compiles.
  {
    TempDir empty("disk-empty");
    CHECK(run_child("disk_hit:80", empty.path()) == kChildNotDiskHit);
  }
  // A process that has never compiled cache_add<80> compiles it into the empty cache...
  CHECK(run_child("compile:80", dir.path()) == kChildOk);
  CHECK(entries(dir.path()).size() == 1);
  // ...and the next one loads it: disk_hits == 1, compiled == 0.
  CHECK(run_child("disk_hit:80", dir.path()) == kChildOk);
  CHECK(entries(dir.path()).size() == 1);
  // So does this process, which has not compiled it either.
  StatsDelta d;
  auto kernel = compile<cache_add<80>>(cpu());
  CHECK(run_and_check(kernel, 80, 1000));
  CHECK(d.disk_hits() == 1);
  CHECK(d.compiled() == 0);
}

TEST_CASE("kernel cache: a corrupted entry is detected, removed and recompiled") {
  TempDir dir("corrupt");
  ScopedEnv env("KDSL_CACHE_DIR", dir.path().string());
  REQUIRE(run_child("compile:96", dir.path()) == kChildOk);
  std::vector<fs::path> found = entries(dir.path());
  REQUIRE(found.size() == 1);
  const fs::path entry = found[0];
  std::vector<uint8_t> bytes = read_bytes(entry);
  REQUIRE(bytes.size() > 64);
  bytes[bytes.size() / 2] ^= 0x40;  // inside the code
  write_bytes(entry, bytes);

  StatsDelta d;
  std::string log;
  {
    kdsl_test::StderrCapture capture;
    auto kernel = compile<cache_add<96>>(cpu());
    bool ok = run_and_check(kernel, 96, 1000);
    log = capture.text();
    CHECK(ok);
  }
  INFO("log: ", log);
  CHECK(d.compiled() == 1);
  CHECK(d.disk_hits() == 0);
  CHECK(log.find("discarding " + entry.string()) != std::string::npos);
  CHECK(log.find("checksum mismatch") != std::string::npos);
  // The recompile replaced it with a good entry, which the next process loads.
  REQUIRE(entries(dir.path()).size() == 1);
  CHECK(read_bytes(entry) != bytes);
  CHECK(run_child("disk_hit:96", dir.path()) == kChildOk);
  CHECK(files_with_suffix(dir.path(), ".tmp").empty());
}

TEST_CASE("kernel cache: a checksummed entry whose code does not load is removed and recompiled") {
  // The checksum says the file is as it was written, not that its object links: such an entry
  // must cost one recompile, not fail every run.
  auto check = [](auto make_kernel, int block, const std::string &what, auto corrupt) {
    CAPTURE(what);
    TempDir dir("unloadable");
    ScopedEnv env("KDSL_CACHE_DIR", dir.path().string());
    REQUIRE(run_child("compile:" + std::to_string(block), dir.path()) == kChildOk);
    std::vector<fs::path> found = entries(dir.path());
    REQUIRE(found.size() == 1);
    const fs::path entry = found[0];
    corrupt(entry);
    const std::vector<uint8_t> bad = read_bytes(entry);

    StatsDelta d;
    std::string log;
    bool ok = false;
    {
      kdsl_test::StderrCapture capture;
      try {
        auto kernel = make_kernel();
        ok = run_and_check(kernel, block, 1000);
      } catch (const std::exception &e) {
        std::fprintf(stderr, "threw: %s\n", e.what());
      }
      log = capture.text();
    }
    INFO("log: ", log);
    CHECK(ok);
    CHECK(d.compiled() == 1);
    CHECK(d.disk_hits() == 0);
    CHECK(log.find("discarding " + entry.string()) != std::string::npos);
    CHECK(log.find("does not load") != std::string::npos);
    // The recompile stored a good entry in its place, which the next process loads.
    REQUIRE(entries(dir.path()).size() == 1);
    CHECK(read_bytes(entry) != bad);
    CHECK(run_child("disk_hit:" + std::to_string(block), dir.path()) == kChildOk);
  };
  check([] { return compile<cache_add<240>>(cpu()); }, 240, "garbage object bytes", [](const fs::path &entry) {
    std::vector<uint8_t> garbage(4096);
    for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = uint8_t(i * 131 + 7);
    rewrite_entry(entry, "kdsl_garbage", garbage);
  });
  check([] { return compile<cache_add<256>>(cpu()); }, 256, "an object without the entry's symbol", [](const fs::path &entry) {
    // A real object (this very kernel's), under a symbol it does not define.
    const std::vector<uint8_t> bytes = read_bytes(entry);
    size_t at = 12;
    std::vector<uint8_t> sections[4];
    for (auto &section : sections) {
      uint64_t n = 0;
      for (int i = 0; i < 8; ++i) n |= uint64_t(bytes.at(at + i)) << (8 * i);
      section.assign(bytes.begin() + long(at + 8), bytes.begin() + long(at + 8 + n));
      at += 8 + n;
    }
    rewrite_entry(entry, "kdsl_no_such_symbol", sections[3]);
  });
}

TEST_CASE("kernel cache: two processes compiling the same kernel at once") {
  TempDir dir("race");
  TempDir go_dir("race-go");
  ScopedEnv env("KDSL_CACHE_DIR", dir.path().string());
  const fs::path go = go_dir.path() / "go";
  // Both wait for the go file, so their compiles overlap.
  pid_t a = spawn_child("either:112", dir.path(), go.string());
  pid_t b = spawn_child("either:112", dir.path(), go.string());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let both start and trace
  std::ofstream(go) << "go\n";
  CHECK(wait_child(a) == kChildOk);
  CHECK(wait_child(b) == kChildOk);
  CHECK(entries(dir.path()).size() == 1);
  CHECK(files_with_suffix(dir.path(), ".tmp").empty());
  // The one entry left is whole: a third process loads it.
  CHECK(run_child("disk_hit:112", dir.path()) == kChildOk);
}

TEST_CASE("kernel cache: kernel name, IR, specialization and options each make another entry") {
  TempDir dir("keys");
  ScopedEnv env("KDSL_CACHE_DIR", dir.path().string());
  StatsDelta d;

  SUBCASE("kernel name") {
    auto a = compile<cache_add<176>>(cpu());
    auto b = compile<cache_add_renamed<176>>(cpu());
    CHECK(run_and_check(a, 176, 1000));
    CHECK(run_and_check(b, 176, 1000));
    CHECK(d.compiled() == 2);
    CHECK(entries(dir.path()).size() == 2);
  }
  SUBCASE("IR: the same kernel traced to another body") {
    g_variant = 0;
    auto sum = compile<cache_variant<192>>(cpu());
    CHECK(run_and_check(sum, 192, 1000));
    g_variant = 1;
    auto product = compile<cache_variant<192>>(cpu());  // a new object traces again
    CHECK(run_and_check(product, 192, 1000, /*product=*/true));
    g_variant = 0;
    CHECK(d.compiled() == 2);
    CHECK(d.memory_hits() == 0);
    CHECK(entries(dir.path()).size() == 2);
    // Tracing the first body again finds it.
    auto sum_again = compile<cache_variant<192>>(cpu());
    CHECK(run_and_check(sum_again, 192, 500));
    CHECK(d.memory_hits() == 1);
    CHECK(d.compiled() == 2);
  }
  SUBCASE("specialization: n = 1, 16, 17") {
    auto kernel = compile<cache_add<208>>(cpu());
    CHECK(run_and_check(kernel, 208, 1));   // EqualToOne
    CHECK(run_and_check(kernel, 208, 16));  // Divisible16
    CHECK(run_and_check(kernel, 208, 17));  // nothing known
    CHECK(d.compiled() == 3);
    CHECK(entries(dir.path()).size() == 3);
    CHECK(run_and_check(kernel, 208, 33));  // nothing known again: the n = 17 code
    CHECK(run_and_check(kernel, 208, 32));  // Divisible16 again
    CHECK(d.compiled() == 3);
    CHECK(entries(dir.path()).size() == 3);
  }
  SUBCASE("options: num_warps") {
    auto four = compile<cache_add<224>>(cpu(), {.num_warps = 4});
    auto eight = compile<cache_add<224>>(cpu(), {.num_warps = 8});
    CHECK(run_and_check(four, 224, 1000));
    CHECK(run_and_check(eight, 224, 1000));
    CHECK(d.compiled() == 2);
    CHECK(entries(dir.path()).size() == 2);
    auto stages = compile<cache_add<224>>(cpu(), {.num_warps = 4, .num_stages = 3});
    CHECK(run_and_check(stages, 224, 1000));
    CHECK(d.compiled() == 3);
    CHECK(entries(dir.path()).size() == 3);
  }
}

TEST_CASE("kernel cache: every field of the key changes the digest") {
  jit_cache::CacheKey base;
  base.kernel_name = "cache_add<64>";
  base.ir_hash = jit_cache::hash_text_hex("kernel @cache_add<64>() {\n}\n");
  base.specialization = "16,16,16,_";
  base.options = "num_warps=4,num_stages=2";
  base.backend = "host";
  base.arch = "znver3";
  base.features = "+avx2,+fma";
  base.kdsl_version = "0.1.0";
  base.llvm_version = "19.1.7";
  const std::string digest = base.digest();
  CHECK(digest.size() == 32);
  CHECK(base.digest() == digest);  // stable

  std::vector<std::pair<const char *, std::string jit_cache::CacheKey::*>> fields = {
      {"kernel_name", &jit_cache::CacheKey::kernel_name}, {"ir_hash", &jit_cache::CacheKey::ir_hash},
      {"specialization", &jit_cache::CacheKey::specialization}, {"options", &jit_cache::CacheKey::options},
      {"backend", &jit_cache::CacheKey::backend}, {"arch", &jit_cache::CacheKey::arch},
      {"features", &jit_cache::CacheKey::features}, {"kdsl_version", &jit_cache::CacheKey::kdsl_version},
      {"llvm_version", &jit_cache::CacheKey::llvm_version},
  };
  for (const auto &[name, member] : fields) {
    INFO("field ", name);
    jit_cache::CacheKey changed = base;
    changed.*member += "x";
    CHECK(changed.digest() != digest);
    jit_cache::CacheKey emptied = base;
    emptied.*member = "";
    CHECK(emptied.digest() != digest);
  }
  // Target fields one character apart, as real targets differ.
  jit_cache::CacheKey sm = base;
  sm.backend = "cuda", sm.arch = "sm_90", sm.features = "";
  jit_cache::CacheKey sm89 = sm;
  sm89.arch = "sm_89";
  CHECK(sm.digest() != sm89.digest());
  jit_cache::CacheKey avx512 = base;
  avx512.features = "+avx2,+fma,+avx512f";
  CHECK(avx512.digest() != digest);
  jit_cache::CacheKey llvm20 = base;
  llvm20.llvm_version = "20.1.0";
  CHECK(llvm20.digest() != digest);
  // Moving a byte across a field boundary is another key.
  jit_cache::CacheKey moved = base;
  moved.backend = "hostz", moved.arch = "nver3";
  CHECK(moved.digest() != digest);
}

TEST_CASE("kernel cache: KDSL_DUMP=ir,llvm,asm writes each stage of a compiled kernel") {
  TempDir cache("dump-cache");
  TempDir dump("dump");
  ScopedEnv cache_env("KDSL_CACHE_DIR", cache.path().string());
  ScopedEnv dump_env("KDSL_DUMP", "ir,llvm,asm");
  ScopedEnv dir_env("KDSL_DUMP_DIR", dump.path().string());
  auto kernel = compile<cache_add<144>>(cpu());
  CHECK(run_and_check(kernel, 144, 1000));

  std::vector<fs::path> kir = files_with_suffix(dump.path(), ".kir");
  std::vector<fs::path> ll = files_with_suffix(dump.path(), ".ll");
  std::vector<fs::path> s = files_with_suffix(dump.path(), ".s");
  CHECK(!kir.empty());
  CHECK(!ll.empty());
  CHECK(!s.empty());
  // The IR dumps are IR text: they parse back to the same text.
  for (const fs::path &p : kir) {
    INFO("dump ", p.string());
    std::ifstream in(p);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(text.find("kernel @") == 0);
    CHECK(text.find("cache_add<144>") != std::string::npos);
    CHECK(ir::print(ir::parse(text)) == text);
  }
  for (const fs::path &p : ll) CHECK(fs::file_size(p) > 0);
  for (const fs::path &p : s) CHECK(fs::file_size(p) > 0);
}

TEST_CASE("kernel cache: without KDSL_DUMP nothing is dumped") {
  TempDir cache("nodump-cache");
  TempDir dump("nodump");
  ScopedEnv cache_env("KDSL_CACHE_DIR", cache.path().string());
  ScopedEnv dump_env("KDSL_DUMP", "");
  ScopedEnv dir_env("KDSL_DUMP_DIR", dump.path().string());
  auto kernel = compile<cache_add<160>>(cpu());
  CHECK(run_and_check(kernel, 160, 1000));
  CHECK(fs::is_empty(dump.path()));
}
