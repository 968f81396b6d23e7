// launch_graph.h - kernel launches recorded once and replayed as one unit: a CUDA or HIP graph on a GPU, a replayed list elsewhere
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>

#include <kdsl/device.h>

namespace kdsl {

namespace detail {
class CapturedLaunches;
}

// A fixed sequence of kernel launches on one device. capture() runs `launches` once in capture
// mode: nothing executes, and every kernel launch issued on the device meanwhile (from any
// thread) is recorded with its arguments as they are then, pointers and scalars alike. A
// replay does that work again over whatever the memory holds at the time, so what changes from
// one replay to the next (a decode step's token and position) must live in device memory, not
// in scalar arguments. This is CUDA graphs' model, and on NVIDIA the launches are captured
// from the stream into one CUDA graph: a replay is one cuGraphLaunch; on AMD likewise into a
// HIP graph (hipGraphLaunch), where the runtime has graphs (ROCm 5.3 on). Elsewhere a replay
// reissues the recorded launches without their argument checks and specialization lookups.
//
// A capture holds launches only: Device::synchronize() inside it, and on a GPU copies to or
// from the device and allocations, throw kdsl::Error naming the device. On the CPU, Buffers
// are host memory and their copies run at once, so keep copies outside the capture on every
// device.
// Kernels must already be compiled where the capture cannot compile them: on a GPU run the
// launches once before capturing them (a compile inside a capture is fine on the CPU).
// Everything a graph's launches point at must outlive its replays; the graph keeps the
// kernels' code loaded itself.
class LaunchGraph {
 public:
  LaunchGraph() = default;
  // Records the launches `launches` issues on `device`. Throws kdsl::Error when the device is
  // already capturing, or when the device refuses the capture (its message says why); a
  // capture that throws, from `launches` or from the device, leaves nothing recorded.
  static LaunchGraph capture(const Device &device, const std::function<void()> &launches);

  // Issues the recorded launches again, in order: asynchronous on a GPU, like a launch.
  void replay() const;
  // Kernel launches recorded (a GPU's empty grids, which launch nothing, are not).
  size_t launches() const;
  // Whether this holds a capture (a default-constructed graph does not).
  explicit operator bool() const { return captured_ != nullptr; }

 private:
  std::optional<Device> device_;
  std::shared_ptr<detail::CapturedLaunches> captured_;
};

}  // namespace kdsl
