// launch_graph.cpp - kdsl::LaunchGraph: a capture through the device's Backend, ended however the code it runs ends
#include <kdsl/launch_graph.h>

#include "runtime/backend.h"
#include "runtime/launch_capture.h"

namespace kdsl {

LaunchGraph LaunchGraph::capture(const Device &device, const std::function<void()> &launches) {
  detail::Backend &backend = device.impl();
  backend.begin_capture();
  std::unique_ptr<detail::CapturedLaunches> captured;
  try {
    launches();
  } catch (...) {
    try {
      backend.end_capture();  // discarded: the capture is incomplete
    } catch (...) {
    }
    throw;
  }
  captured = backend.end_capture();
  LaunchGraph graph;
  graph.device_.emplace(device);
  graph.captured_ = std::move(captured);
  return graph;
}

void LaunchGraph::replay() const {
  if (!captured_) throw Error("LaunchGraph::replay: the graph holds no capture (made by LaunchGraph::capture)");
  captured_->replay();
}

size_t LaunchGraph::launches() const { return captured_ ? captured_->launches() : 0; }

}  // namespace kdsl
