// cuda_graph.cpp - kdsl::LaunchGraph on NVIDIA: the device's stream captured into a CUDA graph, replayed with one cuGraphLaunch
#include <fmt/format.h>

#include <kdsl/error.h>

#include "runtime/cuda/cuda_device.h"
#include "support/log.h"

namespace kdsl::detail {

namespace {

// An instantiated graph and what it needs kept alive: the kernels' modules (a graph node names
// a function, which unloading its module would leave dangling).
class CudaGraph final : public CapturedLaunches {
 public:
  CudaGraph(CudaDevice &device, const cuda::Driver &drv, cuda::CUgraph graph, cuda::CUgraphExec exec, std::vector<std::shared_ptr<LoadedCode>> code,
            size_t launches)
      : device_(device), drv_(drv), graph_(graph), exec_(exec), code_(std::move(code)), launches_(launches),
        name_(fmt::format("graph of {} launches", launches)) {}
  ~CudaGraph() override {
    // Never throws; a driver that has shut down (at exit) has freed both already.
    if (exec_) drv_.cuGraphExecDestroy(exec_);
    if (graph_) drv_.cuGraphDestroy(graph_);
  }
  void replay() override {
    device_.launch_graph(exec_, name_);
    count_replayed_launches(launches_);
  }
  size_t launches() const override { return launches_; }

 private:
  CudaDevice &device_;  // the LaunchGraph holds its Device, so the device outlives this
  const cuda::Driver &drv_;
  cuda::CUgraph graph_;
  cuda::CUgraphExec exec_;
  std::vector<std::shared_ptr<LoadedCode>> code_;
  size_t launches_;
  std::string name_;  // KDSL_PROFILE's entry and the last launch's name, made once
};

}  // namespace

void CudaDevice::capture_check(cuda::CUresult result, const char *call) const {
  if (result != 0) check_capture_call(name_, [&] { drv_.check(result, call); });
}

void CudaDevice::begin_capture() {
  if (!drv_.cuStreamBeginCapture || !drv_.cuStreamEndCapture || !drv_.cuGraphInstantiate || !drv_.cuGraphLaunch || !drv_.cuGraphExecDestroy ||
      !drv_.cuGraphDestroy)
    throw Error(fmt::format("LaunchGraph::capture on {}: the driver ({}) lacks the CUDA graph entry points (cuStreamBeginCapture_v2, "
                            "cuGraphInstantiateWithFlags, ...); a driver for CUDA 11.4 or newer has them",
                            name_, drv_.library));
  capture_.begin(name_, [&] {
    make_current();
    // The driver's own words, without the last launch's note: a refused capture is no kernel's fault.
    capture_check(drv_.cuStreamBeginCapture(stream_, cuda::kStreamCaptureModeRelaxed), "cuStreamBeginCapture");
  });
}

void CudaDevice::capture_launch(std::shared_ptr<LoadedCode> code, const LaunchRequest &request) {
  launch(*code, request);  // recorded by the driver, not run
  capture_.add(std::move(code));
}

std::unique_ptr<CapturedLaunches> CudaDevice::end_capture() {
  StreamCapture::Captured captured = capture_.end();
  make_current();
  cuda::CUgraph graph = nullptr;
  capture_check(drv_.cuStreamEndCapture(stream_, &graph), "cuStreamEndCapture");
  cuda::CUgraphExec exec = nullptr;
  cuda::CUresult r = drv_.cuGraphInstantiate(&exec, graph, 0);
  if (r != 0) {
    drv_.cuGraphDestroy(graph);
    capture_check(r, "cuGraphInstantiateWithFlags");
  }
  log_debug("captured a CUDA graph of {} launches over {} kernels on {}", captured.launches, captured.code.size(), name_);
  return std::make_unique<CudaGraph>(*this, drv_, graph, exec, std::move(captured.code), captured.launches);
}

void CudaDevice::launch_graph(cuda::CUgraphExec graph, const std::string &name) {
  make_current();
  cuda::CUevent start = profile_begin();
  cuda::CUresult r = drv_.cuGraphLaunch(graph, stream_);
  if (r != 0) {
    if (start) spare_events_.push_back(start);
    check(r, "cuGraphLaunch");
  }
  profile_end(start, name);
  const unsigned none[3] = {0, 0, 0};  // a graph has no one shape
  note_last_launch(name, none, none, 0);
}

}  // namespace kdsl::detail
