// launch_capture.h - what a backend's capture returns (LaunchGraph), and the recording of backends without a graph API of their own
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <kdsl/kernel.h>

namespace kdsl::detail {

class Backend;
class LoadedCode;
struct LaunchRequest;

// A capture as Backend::end_capture returns it and kdsl::LaunchGraph replays it.
class CapturedLaunches {
 public:
  virtual ~CapturedLaunches() = default;
  virtual void replay() = 0;
  virtual size_t launches() const = 0;
};

// The launches of a capture on a backend that replays them through its own launch() (the CPU,
// HIP): each launch's code (kept loaded), kernel signature, arguments and slots as kernel.cpp
// packed them. Replaying skips the packing, the specialization lookup and the extent checks,
// which were done when the launch was recorded.
class LaunchRecording {
 public:
  // One recorded launch.
  struct Launch {
    std::shared_ptr<LoadedCode> code;
    KernelSignature kernel;
    std::vector<ArgValue> args;
    std::vector<uint64_t> slots;  // the arguments' and checked code's (LaunchRequest::slots)
    size_t count;
    Grid grid;
    bool checked;
  };

  bool active() const;
  // Throws kdsl::Error naming `device` when a capture is already under way.
  void begin(const std::string &device);
  void add(std::shared_ptr<LoadedCode> code, const LaunchRequest &request);
  // Ends the capture; the launches then replay through `backend`.
  std::unique_ptr<CapturedLaunches> end(Backend &backend);

 private:
  std::mutex mutex_;
  std::atomic<bool> active_{false};  // read at every launch: no lock there
  std::vector<Launch> launches_;
};

// "copy_to_host is not allowed inside a LaunchGraph capture on <device>: ...": the error for
// what a capture cannot record (copies, allocations, synchronize) on a GPU.
[[noreturn]] void capture_refusal(const char *call, const std::string &device);

// The bookkeeping of a capture into a GPU runtime's own graph (CUDA's, HIP's stream capture):
// whether one is under way, and the code its launches use, which the graph keeps loaded (a
// graph node names a function that unloading its module would leave dangling).
class StreamCapture {
 public:
  bool active() const { return active_.load(std::memory_order_acquire); }
  // Runs `start` (the runtime's begin-capture call), then counts the capture as begun. Throws
  // kdsl::Error naming `device` when one is already under way, and whatever `start` throws.
  void begin(const std::string &device, const std::function<void()> &start);
  void add(std::shared_ptr<LoadedCode> code);
  // Ends the capture: the code its launches used, each module once, and how many launches.
  struct Captured {
    std::vector<std::shared_ptr<LoadedCode>> code;
    size_t launches = 0;
  };
  Captured end();

 private:
  std::mutex mutex_;
  std::atomic<bool> active_{false};  // read at every launch: no lock there
  Captured captured_;
};

// Runs `check` (a GPU runtime's check of one capture call's result) and puts "LaunchGraph::capture
// on <device>: " in front of what it throws: the runtime's own words, without a kernel's note,
// since a refused capture is no kernel's fault.
void check_capture_call(const std::string &device, const std::function<void()> &check);

// Counts replayed launches in cache_stats() (kernel.cpp), as launches through a Kernel are.
void count_replayed_launches(size_t launches);

}  // namespace kdsl::detail
