// hip_graph.cpp - kdsl::LaunchGraph on AMD: the device's stream captured into a HIP graph, replayed with one hipGraphLaunch
#include <fmt/format.h>

#include <kdsl/error.h>

#include "runtime/hip/hip_device.h"
#include "support/log.h"

namespace kdsl::detail {
namespace {

// An instantiated graph and the kernels' modules it names (unloading one would leave a node
// dangling).
class HipGraph final : public CapturedLaunches {
 public:
  HipGraph(HipDevice &device, const hip::Runtime &rt, hip::hipGraph_t graph, hip::hipGraphExec_t exec, std::vector<std::shared_ptr<LoadedCode>> code,
           size_t launches)
      : device_(device), rt_(rt), graph_(graph), exec_(exec), code_(std::move(code)), launches_(launches) {}
  ~HipGraph() override {
    if (exec_) rt_.hipGraphExecDestroy(exec_);  // never throws
    if (graph_) rt_.hipGraphDestroy(graph_);
  }
  void replay() override {
    device_.launch_graph(exec_);
    count_replayed_launches(launches_);
  }
  size_t launches() const override { return launches_; }

 private:
  HipDevice &device_;  // the LaunchGraph holds its Device, so the device outlives this
  const hip::Runtime &rt_;
  hip::hipGraph_t graph_;
  hip::hipGraphExec_t exec_;
  std::vector<std::shared_ptr<LoadedCode>> code_;
  size_t launches_;
};

}  // namespace

void HipDevice::capture_check(hip::hipError_t result, const char *call) const {
  if (result != 0) check_capture_call(name_, [&] { rt_.check(result, call); });
}

void HipDevice::begin_capture() {
  if (!rt_.has_graphs()) return Backend::begin_capture();
  capture_.begin(name_, [&] {
    make_current();
    capture_check(rt_.hipStreamBeginCapture(stream_, hip::kStreamCaptureModeRelaxed), "hipStreamBeginCapture");
  });
}

bool HipDevice::capturing() const { return rt_.has_graphs() ? capture_.active() : Backend::capturing(); }

void HipDevice::capture_launch(std::shared_ptr<LoadedCode> code, const LaunchRequest &request) {
  if (!rt_.has_graphs()) return Backend::capture_launch(std::move(code), request);
  launch(*code, request);  // recorded by the runtime, not run
  capture_.add(std::move(code));
}

std::unique_ptr<CapturedLaunches> HipDevice::end_capture() {
  if (!rt_.has_graphs()) return Backend::end_capture();
  StreamCapture::Captured captured = capture_.end();
  make_current();
  hip::hipGraph_t graph = nullptr;
  capture_check(rt_.hipStreamEndCapture(stream_, &graph), "hipStreamEndCapture");
  hip::hipGraphExec_t exec = nullptr;
  if (hip::hipError_t r = rt_.hipGraphInstantiateWithFlags(&exec, graph, 0); r != 0) {
    rt_.hipGraphDestroy(graph);
    capture_check(r, "hipGraphInstantiateWithFlags");
  }
  log_debug("captured a HIP graph of {} launches over {} kernels on {}", captured.launches, captured.code.size(), name_);
  return std::make_unique<HipGraph>(*this, rt_, graph, exec, std::move(captured.code), captured.launches);
}

void HipDevice::launch_graph(hip::hipGraphExec_t graph) {
  make_current();
  rt_.check(rt_.hipGraphLaunch(graph, stream_), "hipGraphLaunch");
}

}  // namespace kdsl::detail
