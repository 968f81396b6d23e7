// launch_profile.cpp - per-kernel launch counts and times under KDSL_PROFILE, as a table on stderr at exit
#include "runtime/launch_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace kdsl::detail {
namespace {

struct KernelTime {
  int64_t launches = 0;
  double total_us = 0;
};

class LaunchProfile {
 public:
  void add(std::string_view kernel, double us) {
    std::lock_guard lock(mutex_);
    KernelTime &t = by_kernel_[std::string(kernel)];
    t.launches += 1;
    t.total_us += us;
  }

  // Kernel names are long (template arguments included), so the name ends each line.
  std::string take() {
    std::vector<std::pair<std::string, KernelTime>> rows;
    {
      std::lock_guard lock(mutex_);
      rows.assign(by_kernel_.begin(), by_kernel_.end());
      by_kernel_.clear();
    }
    if (rows.empty()) return {};
    std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) { return a.second.total_us > b.second.total_us; });
    double all_us = 0;
    for (const auto &r : rows) all_us += r.second.total_us;
    std::string out = fmt::format("kdsl launch profile (KDSL_PROFILE: host launches' wall time, GPU launches' event time)\n{:>10} {:>11} {:>10} {:>6}  kernel\n",
                                  "launches", "total ms", "mean us", "share");
    for (const auto &[name, t] : rows)
      out += fmt::format("{:>10} {:>11.3f} {:>10.2f} {:>5.1f}%  {}\n", t.launches, t.total_us / 1e3, t.total_us / double(t.launches),
                         all_us > 0 ? 100.0 * t.total_us / all_us : 0.0, name);
    return out;
  }

  // Runs after main returns (the profile is a function-local static constructed before the
  // first launch it records, so it outlives everything that launches).
  ~LaunchProfile() {
    if (std::string table = take(); !table.empty()) std::fputs(("\n" + table).c_str(), stderr);
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, KernelTime> by_kernel_;
};

LaunchProfile &profile() {
  static LaunchProfile p;
  return p;
}

std::atomic<bool> &enabled_flag() {
  static std::atomic<bool> on = [] {
    const char *v = std::getenv("KDSL_PROFILE");
    bool set = v && *v && std::string_view(v) != "0";
    if (set) profile();  // constructed before any launch it records
    return set;
  }();
  return on;
}

}  // namespace

bool launch_profile_enabled() { return enabled_flag().load(std::memory_order_relaxed); }

void set_launch_profile_enabled(bool on) {
  if (on) profile();  // constructed before any launch it records
  enabled_flag().store(on);
}

void record_launch(std::string_view kernel, double us) { profile().add(kernel, us); }

std::string take_launch_profile() { return profile().take(); }

}  // namespace kdsl::detail
