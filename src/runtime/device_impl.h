// device_impl.h - what a device is inside the run time: its kind, its target and how it runs a grid
#pragma once
#include <memory>
#include <string>

#include <kdsl/device.h>

#include "codegen/codegen.h"
#include "runtime/thread_pool.h"

namespace kdsl::detail {

class DeviceImpl {
 public:
  virtual ~DeviceImpl() = default;
  virtual Device::Kind kind() const = 0;
  virtual std::string name() const = 0;
  virtual const codegen::TargetDesc &target() const = 0;
  virtual int threads() const = 0;
};

// The host CPU: kernels are JIT-compiled for it and program instances run on a thread pool.
class CpuDevice final : public DeviceImpl {
 public:
  explicit CpuDevice(int threads);
  Device::Kind kind() const override { return Device::Kind::Cpu; }
  std::string name() const override;
  const codegen::TargetDesc &target() const override { return codegen::host_target(); }
  int threads() const override { return pool_.size(); }

  // Runs entry over every program of the grid, split across the pool.
  void run(codegen::HostEntry entry, const uint64_t *args, const int32_t grid[3]);

 private:
  runtime::ThreadPool pool_;
};

}  // namespace kdsl::detail
