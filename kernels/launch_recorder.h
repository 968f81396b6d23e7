// launch_recorder.h - the Library's launches recorded as (kernel, specialization, options), instead of or beside running them
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include <kdsl/kernel.h>
#include <kdsl/specialization.h>

namespace kdsl::kernels {

// One compiled specialization a launch looks up: the kernel (its signature traces it for
// compile_for), the options it is compiled with and one class per argument.
struct RecordedKernel {
  kdsl::detail::KernelSignature signature;
  CompileOptions options;
  Specialization specialization;
  int64_t launches = 0;  // launches recorded with it

  // "name [16,_,1] num_warps=4,num_stages=2": what tells two recorded kernels apart, for
  // printing and for comparing a plan with what an engine launched.
  std::string text() const;
};

// The device a recording stands for where it is not the Library's own: a GPU (weights then sit
// where an upload puts them) and its processor count, which the dispatch reads (the decode
// attention splits a context into enough programs for every processor). 0: the Library's device.
struct DeviceStandIn {
  bool gpu = false;
  int threads = 0;
};

// What a Library records for (kernels/library.h: Library(device, &recorder)). A plan records
// instead of launching: nothing runs, no kernel is traced or compiled, and its dispatch can
// stand for another device (a GPU's multiprocessors when planning on a CPU). A test records
// beside launching, to compare what ran with a plan. Not thread-safe, like the Library.
class LaunchRecorder {
 public:
  enum class Mode { InsteadOfLaunching, BesideLaunching };
  explicit LaunchRecorder(Mode mode = Mode::InsteadOfLaunching, DeviceStandIn stand_in = DeviceStandIn()) : mode_(mode), stand_in_(stand_in) {}

  Mode mode() const { return mode_; }
  bool launches() const { return mode_ == Mode::BesideLaunching; }
  const DeviceStandIn &stand_in() const { return stand_in_; }

  // One launch of the kernel whose signature `signature()` gives, `identity` one address per
  // kernel (the Library's), each argument classified as the launch classifies it.
  void record(const void *identity, kdsl::detail::KernelSignature (*signature)(), const CompileOptions &options, const ArgValue *args, size_t count);

  // Every recorded (kernel, specialization, options), ordered by text().
  std::vector<RecordedKernel> kernels() const;
  // Launches recorded in all.
  int64_t recorded_launches() const { return launches_; }

 private:
  struct Kernel {
    kdsl::detail::KernelSignature signature;
    CompileOptions options;
    std::unordered_map<uint64_t, int64_t> packed;             // up to 32 arguments: 2 bits each
    std::map<std::vector<ArgSpec>, int64_t> wide;             // more
  };

  Mode mode_;
  DeviceStandIn stand_in_;
  std::unordered_map<const void *, Kernel> by_kernel_;
  int64_t launches_ = 0;
};

}  // namespace kdsl::kernels
