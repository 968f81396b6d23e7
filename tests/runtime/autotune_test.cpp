// autotune_test.cpp - kdsl::autotune: the fastest of candidates whose work differs many times over, its record reused, KDSL_AUTOTUNE=0, damaged and stale records
#include <kdsl/autotune.h>
#include <kdsl/kdsl.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "jit_cache/disk_cache.h"
#include "jit_cache/tuning_record.h"
#include "support/log.h"
#include "tests/scratch_cache.h"
#include "tests/stream_capture.h"
#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;
namespace fs = std::filesystem;

namespace autotune_test {

constexpr int kBlock = 64;

// out = x passed WORK * reps times through a * 0.5 + 1: candidates whose only difference is how
// much arithmetic they do, so which is fastest is not in doubt on any machine.
template <int WORK>
void spin(Ptr<const f32> x, Ptr<f32> out, Scalar<i32> n, Scalar<i32> reps) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto m = offs < n;
  auto v = for_range(0, reps * WORK, 1, load(x + offs, m, 0), [&](auto, auto a) { return a * 0.5f + 1.0f; });
  store(out + offs, v, m);
}

// Three candidates, the slowest the default: 256, 16 and 1 steps per element over 2^16 elements.
struct SpinTuning {
  Kernel<spin<256>> heavy{cpu(), {}};
  Kernel<spin<16>> medium{cpu(), {}};
  Kernel<spin<1>> light{cpu(), {}};
  std::vector<float> x = std::vector<float>(1 << 16, 1.0f), out = std::vector<float>(1 << 16, 0.0f);
  int runs[3] = {0, 0, 0};

  Tuning tuning(const std::string &key = "n=65536") const { return {"test.spin", key, {"work256", "work16", "work1"}, 0}; }

  TuneResult tune(const std::string &key = "n=65536") {
    const int n = int(x.size());
    auto g = grid(cdiv(n, kBlock));
    const float *cx = x.data();
    float *o = out.data();
    auto compile = [&](int i) -> std::function<void()> {
      if (i == 0) return [&, cx, o, n] { heavy.warm(cx, o, n, 1); };
      if (i == 1) return [&, cx, o, n] { medium.warm(cx, o, n, 1); };
      return [&, cx, o, n] { light.warm(cx, o, n, 1); };
    };
    auto run = [&, g, cx, o, n](int i) {
      ++runs[i];
      if (i == 0) heavy(g, cx, o, n, 1);
      else if (i == 1) medium(g, cx, o, n, 1);
      else light(g, cx, o, n, 1);
    };
    return autotune(cpu(), tuning(key), compile, run);
  }

  fs::path record_path(const std::string &key = "n=65536") const {
    return jit_cache::tuning_record_path(jit_cache::DiskCache::default_dir(), "test.spin", key, cpu().name());
  }
};

}  // namespace autotune_test

using autotune_test::SpinTuning;

TEST_CASE("autotune: picks the fastest candidate, records it, and later lookups (this process or a fresh one) time nothing") {
  kdsl::test::ScratchCache cache("autotune_pick");
  kdsl_test::ScopedEnv on("KDSL_AUTOTUNE", "1");
  detail::forget_tuning_choices();
  SpinTuning s;
  const TuneStats before = tune_stats();
  TuneResult r = s.tune();
  CHECK(r.source == TuneSource::Timed);
  CHECK(r.choice == 2);  // 1 step per element against 16 and 256
  REQUIRE(r.microseconds.size() == 3);
  CHECK(r.microseconds[2] < r.microseconds[0]);
  for (int i = 0; i < 3; ++i) CHECK(s.runs[i] >= 2);  // a warm-up and timed rounds each
  CHECK(tune_stats().timed == before.timed + 1);

  std::string problem;
  auto record = jit_cache::read_tuning_record(s.record_path(), problem);
  INFO(problem);
  REQUIRE(record);
  CHECK(record->winner == "work1");
  CHECK(record->device == cpu().name());
  CHECK(record->candidates == std::vector<std::string>{"work256", "work16", "work1"});

  // Again in this process: remembered, nothing run.
  const int runs_before = s.runs[0] + s.runs[1] + s.runs[2];
  TuneResult again = s.tune();
  CHECK(again.source == TuneSource::Remembered);
  CHECK(again.choice == 2);
  CHECK(s.runs[0] + s.runs[1] + s.runs[2] == runs_before);
  // As a new process starts, with nothing remembered: read from the record, nothing timed.
  detail::forget_tuning_choices();
  TuneResult fresh = s.tune();
  CHECK(fresh.source == TuneSource::Recorded);
  CHECK(fresh.choice == 2);
  CHECK(s.runs[0] + s.runs[1] + s.runs[2] == runs_before);
  CHECK(tune_stats().timed == before.timed + 1);
  CHECK(tune_stats().recorded == before.recorded + 1);
  CHECK(autotune_choice(cpu(), s.tuning()) == 2);
  CHECK(autotune_choice(cpu(), s.tuning("n=other")) == std::nullopt);  // would time: a plan plans every candidate
}

TEST_CASE("autotune: KDSL_AUTOTUNE=0 takes the default, runs nothing and writes no record") {
  kdsl::test::ScratchCache cache("autotune_off");
  kdsl_test::ScopedEnv off("KDSL_AUTOTUNE", "0");
  detail::forget_tuning_choices();
  CHECK(!autotune_enabled());
  SpinTuning s;
  const TuneStats before = tune_stats();
  TuneResult r = s.tune();
  CHECK(r.source == TuneSource::Default);
  CHECK(r.choice == 0);
  CHECK(s.runs[0] + s.runs[1] + s.runs[2] == 0);
  CHECK(!fs::exists(s.record_path()));
  CHECK(tune_stats().defaults == before.defaults + 1);
  CHECK(autotune_choice(cpu(), s.tuning()) == 0);
}

TEST_CASE("autotune: a damaged, stale or foreign record is ignored (with a warning unless merely stale), timed again and replaced") {
  kdsl::test::ScratchCache cache("autotune_bad_records");
  kdsl_test::ScopedEnv on("KDSL_AUTOTUNE", "1");
  detail::forget_tuning_choices();
  SpinTuning s;
  s.tune();  // writes a good record to damage
  REQUIRE(fs::exists(s.record_path()));
  std::string good;
  {
    std::ifstream in(s.record_path());
    good.assign(std::istreambuf_iterator<char>(in), {});
  }
  struct Damage {
    const char *what;
    std::string text;
    const char *said;
    bool stale = false;  // what every upgrade leaves behind: said at KDSL_LOG=info only
  };
  auto replaced = [&](const std::string &from, const std::string &to) {
    std::string text = good;
    return text.replace(text.find(from), from.size(), to);
  };
  const Damage damages[] = {
      {"truncated", good.substr(0, good.size() / 2), "not JSON"},
      {"empty", "", "empty"},
      {"bit flip", replaced("\"winner\": \"work1\"", "\"winner\": \"work3\""), "not one of its candidates"},
      {"stale build", replaced("\"kdsl\": \"", "\"kdsl\": \"0.0.0+old"), "stale: timed by kdsl", true},
      {"stale candidates", replaced("\"work16\"", "\"work8\""), "candidates changed", true},
      {"another device", replaced("\"device\": \"", "\"device\": \"other "), "it was timed on other"},
      {"another version of the format", replaced("\"format\": 1", "\"format\": 99"), "not a tuning record of format 1"},
  };
  for (const Damage &d : damages) {
    CAPTURE(d.what);
    REQUIRE(good.find("\"winner\": \"work1\"") != std::string::npos);
    {
      std::ofstream out(s.record_path(), std::ios::trunc);
      out << d.text;
    }
    detail::forget_tuning_choices();
    const TuneStats before = tune_stats();
    StreamCapture err(stderr, 2);
    TuneResult r = s.tune();
    std::string said = err.text();
    CAPTURE(said);
    CHECK(r.source == TuneSource::Timed);
    CHECK(r.choice == 2);
    CHECK(tune_stats().rejected == before.rejected + 1);
    if (d.stale && log_level() < LogLevel::Info) {
      CHECK_FALSE(contains(said, "ignoring the tuning record"));
    } else {
      CHECK(contains(said, "ignoring the tuning record"));
      CHECK(contains(said, d.said));
    }
    std::string problem;
    auto record = jit_cache::read_tuning_record(s.record_path(), problem);
    CHECK(record);  // replaced by a good one
  }
}

TEST_CASE("autotune: candidate lists and defaults out of range are user errors naming the kernel") {
  Tuning none{"test.none", "k", {}, 0};
  auto nothing = [](int) { return std::function<void()>(); };
  auto run = [](int) {};
  CHECK(contains(error_text([&] { autotune(cpu(), none, nothing, run); }), "kdsl::autotune 'test.none': no candidate configurations"));
  Tuning bad_default{"test.default", "k", {"a", "b"}, 2};
  CHECK(contains(error_text([&] { autotune(cpu(), bad_default, nothing, run); }), "default index 2 is not one of its 2 candidates"));
  CHECK(tune_bucket(1) == 1);
  CHECK(tune_bucket(768) == 1024);
  CHECK(tune_bucket(1024) == 1024);
  CHECK(tune_bucket(32000) == 32768);
}
