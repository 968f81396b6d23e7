// kdsl_bench.cpp - kdsl-bench: compile times, cache and launch overheads, and kernel bandwidth on this machine
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include <kdsl/kdsl.h>

#include "examples/layer_norm.h"
#include "examples/matmul.h"
#include "examples/softmax.h"
#include "examples/vector_add.h"
#include "runtime/host_bandwidth.h"
#include "src/tools/median.h"

using namespace kdsl;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

using tools::median;

void row(const std::string &what, const std::string &measured, const std::string &ceiling, const std::string &ratio) {
  fmt::print("| {:<46} | {:>16} | {:>22} | {:>9} |\n", what, measured, ceiling, ratio);
}

// Median cold compile (trace to linked machine code) of a kernel over `runs` compiles.
template <auto K, class... A>
double cold_compile_ms(const Device &dev, int runs, const A &...args) {
  auto k = compile<K>(dev);
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) times.push_back(k.compile_cold(args...));
  return median(times);
}

// The child side of the disk-hit measurement: the kernel was compiled by the parent into the
// same cache directory; time the first launch here (trace, disk load, JIT link, run of an
// program with every lane masked off) and report it on stdout.
int disk_hit_probe() {
  float dummy[16];
  auto k = compile<examples::add<2048>>(Device::cpu(1));
  auto t = Clock::now();
  k(grid(1), dummy, dummy, dummy, 0);
  double ms = ms_since(t);
  CacheStats s = cache_stats();
  fmt::print("{} {} {}\n", ms, s.disk_hits, s.compiled);
  return s.disk_hits == 1 ? 0 : 1;
}

double disk_hit_ms(const std::string &self) {
  auto dir = std::filesystem::temp_directory_path() / fmt::format("kdsl-bench-cache-{}", getpid());
  std::filesystem::create_directories(dir);
  setenv("KDSL_CACHE_DIR", dir.c_str(), 1);
  float dummy[16];
  compile<examples::add<2048>>(Device::cpu(1))(grid(1), dummy, dummy, dummy, 0);  // fills the disk cache
  std::vector<double> times;
  for (int i = 0; i < 5; ++i) {
    FILE *p = popen(fmt::format("'{}' --disk-hit-probe", self).c_str(), "r");
    double ms = -1, hits = 0, compiled = 0;
    if (p && fscanf(p, "%lf %lf %lf", &ms, &hits, &compiled) == 3 && hits == 1 && compiled == 0) times.push_back(ms);
    if (p) pclose(p);
  }
  std::filesystem::remove_all(dir);
  return times.empty() ? -1 : median(times);
}

// One elementwise function per kernel, for the math throughput rows: the host lowers exp,
// log, tanh, erf and sigmoid to inline polynomials (vector_math.h); GELU is the two forms
// models use (tanh approximation, and exact with erf).
enum class MathFunction { Exp, Log, Tanh, Erf, Sigmoid, GeluTanh, GeluErf };

template <MathFunction F>
void math_throughput(Ptr<const f32> x, Ptr<f32> out, Scalar<i32> n) {
  auto offs = program_id(0) * 1024 + arange<1024>();
  auto m = offs < n;
  auto v = load(x + offs, m, 1.0);
  if constexpr (F == MathFunction::Exp) store(out + offs, exp(v), m);
  if constexpr (F == MathFunction::Log) store(out + offs, log(abs(v)), m);
  if constexpr (F == MathFunction::Tanh) store(out + offs, tanh(v), m);
  if constexpr (F == MathFunction::Erf) store(out + offs, erf(v), m);
  if constexpr (F == MathFunction::Sigmoid) store(out + offs, sigmoid(v), m);
  if constexpr (F == MathFunction::GeluTanh) store(out + offs, 0.5f * v * (1.0f + tanh(0.7978845608f * (v + 0.044715f * v * v * v))), m);
  if constexpr (F == MathFunction::GeluErf) store(out + offs, 0.5f * v * (1.0f + erf(v * 0.70710678f)), m);
}

// Elements per second of math_throughput<F> over x (best of `runs`).
template <MathFunction F>
double math_elements_per_second(const Device &dev, const std::vector<float> &x, std::vector<float> &out, int runs) {
  auto k = compile<math_throughput<F>>(dev);
  const int n = int(x.size());
  k(grid(cdiv(n, 1024)), x.data(), out.data(), n);
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    auto t = Clock::now();
    k(grid(cdiv(n, 1024)), x.data(), out.data(), n);
    best = std::min(best, ms_since(t));
  }
  return double(n) / (best / 1e3);
}

}  // namespace

int main(int argc, char **argv) {
  CLI::App app{"kdsl-bench: measures the kdsl compiler and CPU backend on this machine"};
  int threads = 0;
  bool quick = false, probe = false, math_only = false;
  app.add_option("--threads", threads, "CPU threads (0: all)");
  app.add_flag("--quick", quick, "smaller sizes and fewer repeats");
  app.add_flag("--math", math_only, "only the elementwise math rows (exp, log, tanh, erf, sigmoid, gelu)");
  app.add_flag("--disk-hit-probe", probe, "internal: the second process of the disk-hit measurement");
  CLI11_PARSE(app, argc, argv);
  if (probe) return disk_hit_probe();

  Device dev = Device::cpu(threads);
  const int runs = quick ? 3 : 7;
  fmt::print("kdsl-bench on {}\n\n", dev.name());
  fmt::print("| {:<46} | {:>16} | {:>22} | {:>9} |\n", "measurement", "measured", "target / ceiling", "ratio");
  fmt::print("|{:-<48}|{:-<18}|{:-<24}|{:-<11}|\n", "", "", "", "");

  double copy_gbs = runtime::measure_copy_bandwidth(dev.threads(), size_t(quick ? 128 : 512) << 20);
  // Throughput against a threaded memcpy on the same threads, at sizes far past the caches:
  // the ceiling of every bandwidth row below.
  row("host memcpy bandwidth (read + write)", fmt::format("{:.2f} GB/s", copy_gbs), "(the ceiling)", "-");
  if (!math_only) {
    // Cold compiles: trace, passes, lowering, LLVM O3, object emission, JIT link.
    std::vector<float> f(4096, 1.0f);
    std::vector<half> h(64 * 64);
    auto compile_row = [&](const char *name, double ms) { row(fmt::format("cold compile: {}", name), fmt::format("{:.1f} ms", ms), "30 ms", fmt::format("{:.2f}x", ms / 30)); };
    compile_row("vector add (elementwise)", cold_compile_ms<examples::add<1024>>(dev, runs, f.data(), f.data(), f.data(), 4096));
    compile_row("softmax (reduction)", cold_compile_ms<examples::softmax<1024>>(dev, runs, f.data(), f.data(), 1000, 1000));
    compile_row("layer norm (reduction)", cold_compile_ms<examples::layer_norm<1024>>(dev, runs, f.data(), f.data(), f.data(), f.data(), 1000, 1e-5f));
    compile_row("matmul 32x32x32 (dot, for_range)", cold_compile_ms<examples::matmul<32, 32, 32>>(dev, runs, h.data(), h.data(), f.data(), 64, 64, 64));

    // In-memory hit plus launch overhead: one program with every lane masked off (n = 0; an
    // empty grid is refused), so this is argument checks, specialization, the cache lookup, the
    // dispatch and a loop of 1024 false compares.
    {
      auto k = compile<examples::add<1024>>(dev);
      k(grid(1), f.data(), f.data(), f.data(), 0);
      const int n = quick ? 20000 : 200000;
      auto t = Clock::now();
      for (int i = 0; i < n; ++i) k(grid(1), f.data(), f.data(), f.data(), 0);
      double us = ms_since(t) * 1000 / n;
      row("memory cache hit + launch overhead", fmt::format("{:.3f} us", us), "2 us", fmt::format("{:.2f}x", us / 2));
    }

    {
      double ms = disk_hit_ms(argv[0]);
      row("disk cache hit in a fresh process", ms < 0 ? "failed" : fmt::format("{:.3f} ms", ms), "1 ms", ms < 0 ? "-" : fmt::format("{:.2f}x", ms));
    }

    // Each kernel unchecked and in checked mode (CompileOptions::checked), the checked launch
    // given sized pointers so every access is tested. Best of `runs` after a warm-up launch.
    auto best_ms = [&](auto &&launch) {
      launch();
      std::vector<double> times;
      for (int r = 0; r < runs; ++r) {
        auto t = Clock::now();
        launch();
        times.push_back(ms_since(t));
      }
      return *std::min_element(times.begin(), times.end());
    };
    auto bandwidth_row = [&](const std::string &what, double bytes, double ms) {
      double gbs = bytes / (ms / 1e3) / 1e9;
      row(what, fmt::format("{:.2f} GB/s", gbs), fmt::format("{:.2f} GB/s", copy_gbs), fmt::format("{:.0f}%", 100 * gbs / copy_gbs));
    };
    {
      const int64_t n = (quick ? 16 : 64) << 20;
      std::vector<float> x(size_t(n), 1.0f), y(size_t(n), 2.0f), out(x.size());
      auto k = compile<examples::add<1024>>(dev);
      auto checked = compile<examples::add<1024>>(dev, {.checked = true});
      const size_t count = x.size();
      double plain_ms = best_ms([&] { k(grid(cdiv(n, 1024)), x.data(), y.data(), out.data(), int(n)); });
      double checked_ms = best_ms([&] { checked(grid(cdiv(n, 1024)), sized(x.data(), count), sized(y.data(), count), sized(out.data(), count), int(n)); });
      bandwidth_row(fmt::format("vector add f32, n = {}M", n >> 20), 3.0 * double(n) * 4, plain_ms);
      bandwidth_row(fmt::format("vector add f32, n = {}M, checked", n >> 20), 3.0 * double(n) * 4, checked_ms);
    }
    {
      const int rows = quick ? 8192 : 32768, cols = 4096;
      std::vector<float> x(size_t(rows) * cols, 0.5f), y(x.size());
      auto k = compile<examples::softmax<4096>>(dev);
      auto checked = compile<examples::softmax<4096>>(dev, {.checked = true});
      const size_t count = x.size();
      double plain_ms = best_ms([&] { k(grid(rows), x.data(), y.data(), cols, cols); });
      double checked_ms = best_ms([&] { checked(grid(rows), sized(x.data(), count), sized(y.data(), count), cols, cols); });
      bandwidth_row(fmt::format("softmax f32, {} x {}", rows, cols), 2.0 * double(x.size()) * 4, plain_ms);
      bandwidth_row(fmt::format("softmax f32, {} x {}, checked", rows, cols), 2.0 * double(x.size()) * 4, checked_ms);
    }
  }
  {
    // Elementwise math over values in [-4, 4]; the ceiling is the copy rate in elements (4
    // bytes read, 4 written each): a function reaching it is bound by memory, not arithmetic.
    const int n = (quick ? 4 : 16) << 20;
    std::vector<float> x(static_cast<size_t>(n)), out(x.size());
    for (int i = 0; i < n; ++i) x[size_t(i)] = -4.0f + 8.0f * float(i % 4093) / 4093.0f;
    const double ceiling = copy_gbs * 1e9 / 8;
    auto math_row = [&](const char *name, double rate) {
      row(fmt::format("{} f32, n = {}M", name, n >> 20), fmt::format("{:.0f} Melem/s", rate / 1e6), fmt::format("{:.0f} Melem/s", ceiling / 1e6),
          fmt::format("{:.0f}%", 100 * rate / ceiling));
    };
    math_row("exp", math_elements_per_second<MathFunction::Exp>(dev, x, out, runs));
    math_row("log", math_elements_per_second<MathFunction::Log>(dev, x, out, runs));
    math_row("tanh", math_elements_per_second<MathFunction::Tanh>(dev, x, out, runs));
    math_row("erf", math_elements_per_second<MathFunction::Erf>(dev, x, out, runs));
    math_row("sigmoid", math_elements_per_second<MathFunction::Sigmoid>(dev, x, out, runs));
    math_row("gelu (tanh form)", math_elements_per_second<MathFunction::GeluTanh>(dev, x, out, runs));
    math_row("gelu (erf form)", math_elements_per_second<MathFunction::GeluErf>(dev, x, out, runs));
  }
  return 0;
}
