// launch_capture.cpp - the recording replayed through Backend::launch, and the errors for what a capture cannot hold
#include "runtime/launch_capture.h"

#include <fmt/format.h>

#include <algorithm>

#include <kdsl/error.h>

#include "runtime/backend.h"

namespace kdsl::detail {

namespace {

// Replays a recording: slots are copied per launch, since checked code writes its violation
// record into the slots after the arguments.
class ReplayedLaunches final : public CapturedLaunches {
 public:
  ReplayedLaunches(Backend &backend, std::vector<LaunchRecording::Launch> launches) : backend_(backend), launches_(std::move(launches)) {}

  void replay() override {
    for (const LaunchRecording::Launch &l : launches_) {
      slots_.assign(l.slots.begin(), l.slots.end());
      backend_.launch(*l.code, LaunchRequest{l.kernel, l.args.data(), slots_.data(), l.count, l.grid, l.checked});
    }
    count_replayed_launches(launches_.size());
  }
  size_t launches() const override { return launches_.size(); }

 private:
  Backend &backend_;  // the LaunchGraph holds its Device, so the backend outlives this
  std::vector<LaunchRecording::Launch> launches_;
  std::vector<uint64_t> slots_;
};

}  // namespace

bool LaunchRecording::active() const { return active_.load(std::memory_order_acquire); }

void LaunchRecording::begin(const std::string &device) {
  std::lock_guard lock(mutex_);
  if (active_.load()) throw Error(fmt::format("LaunchGraph::capture: {} is already capturing; captures do not nest", device));
  launches_.clear();
  active_.store(true, std::memory_order_release);
}

void StreamCapture::begin(const std::string &device, const std::function<void()> &start) {
  std::lock_guard lock(mutex_);
  if (active()) throw Error(fmt::format("LaunchGraph::capture: {} is already capturing; captures do not nest", device));
  start();
  captured_ = {};
  active_.store(true, std::memory_order_release);
}

void check_capture_call(const std::string &device, const std::function<void()> &check) {
  try {
    check();
  } catch (const Error &e) {
    throw Error(fmt::format("LaunchGraph::capture on {}: {}", device, e.what()));
  }
}

void StreamCapture::add(std::shared_ptr<LoadedCode> code) {
  std::lock_guard lock(mutex_);
  captured_.code.push_back(std::move(code));
  ++captured_.launches;
}

StreamCapture::Captured StreamCapture::end() {
  std::lock_guard lock(mutex_);
  active_.store(false, std::memory_order_release);
  Captured out = std::move(captured_);
  captured_ = {};
  // Each module once: a decode step launches the same few kernels hundreds of times.
  std::sort(out.code.begin(), out.code.end());
  out.code.erase(std::unique(out.code.begin(), out.code.end()), out.code.end());
  return out;
}

void LaunchRecording::add(std::shared_ptr<LoadedCode> code, const LaunchRequest &r) {
  const size_t slots = r.checked ? codegen::checked_slot_count(r.count) : r.count;
  Launch l{std::move(code), r.kernel, std::vector<ArgValue>(r.args, r.args + r.count), std::vector<uint64_t>(r.slots, r.slots + slots),
           r.count, r.grid, r.checked};
  std::lock_guard lock(mutex_);
  launches_.push_back(std::move(l));
}

std::unique_ptr<CapturedLaunches> LaunchRecording::end(Backend &backend) {
  std::lock_guard lock(mutex_);
  active_.store(false, std::memory_order_release);
  return std::make_unique<ReplayedLaunches>(backend, std::move(launches_));
}

void capture_refusal(const char *call, const std::string &device) {
  throw Error(fmt::format("{} is not allowed inside a LaunchGraph capture on {}: a capture records kernel launches only (copy, allocate "
                          "and synchronize before the capture or between replays)",
                          call, device));
}

}  // namespace kdsl::detail
