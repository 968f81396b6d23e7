// cuda_tensor_maps.h - a loaded kernel's TMA tensor maps: encoded at launch from its argument slots, the last encoding kept for the next launch
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "codegen/tensor_map.h"
#include "runtime/backend.h"
#include "runtime/cuda/cuda_driver.h"

namespace kdsl::detail {

// cuTensorMapEncodeTiled's data type for elements of `t` (i8 as UINT8, i16 as UINT16: TMA
// copies bytes as they are); -1 for a type TMA does not copy (i1).
int tensor_map_data_type(DType t);
// The CU_TENSOR_MAP_SWIZZLE_* of a `bytes`-byte swizzle (0: none, 32, 64, 128); -1 for others.
int tensor_map_swizzle(int bytes);

// The tensor maps (codegen/tensor_map.h) one loaded kernel takes after its arguments. Decode
// loops launch a kernel thousands of times with the same tensors, so each map's last encoding
// is kept with the values it was made from (address, extents, stride) and reused while they
// stay the same; host threads sharing the kernel take turns (a mutex, held only by kernels
// with maps).
class CudaTensorMaps {
 public:
  CudaTensorMaps() = default;
  explicit CudaTensorMaps(std::vector<codegen::TensorMapSpec> specs);
  bool empty() const { return specs_.empty(); }
  size_t size() const { return specs_.size(); }
  const std::vector<codegen::TensorMapSpec> &specs() const { return specs_; }

  // The device addresses of the two stand-ins for empty tensors (codegen/tensor_map_limits.h):
  // kTensorMapStandInBytes of zeros for maps that are read, as many of their own for maps
  // that are written. Asked only when a launch passes an empty tensor.
  struct StandIns {
    uint64_t read = 0, written = 0;
  };

  // Writes map i, for the launch's argument values, to out[i] (size() of them). A new encoding
  // is checked first against what TMA needs: the base 16-byte aligned, the row stride a
  // positive multiple of 16 bytes below 2^40, rows and cols in [0, 2^32], a driver with
  // cuTensorMapEncodeTiled (CUDA 12); each failure, and a failed encode, is a kdsl::Error naming
  // the kernel and the base argument. A tensor with no rows or no columns is encoded over its
  // stand-in from `stand_ins`, 1 x 1.
  void encode(const cuda::Driver &driver, const LaunchRequest &launch, cuda::CUtensorMap *out, const std::function<StandIns()> &stand_ins) const;

 private:
  // What one map's encoding depends on beyond its spec.
  struct Values {
    uint64_t address = 0;
    int64_t rows = 0, cols = 0, row_stride = 0;
    int64_t planes = 1, plane_stride = 0;  // rank 3
    bool operator==(const Values &) const = default;
  };
  struct Encoded {
    cuda::CUtensorMap map;
    Values values;
    bool valid = false;
  };
  Values values(const codegen::TensorMapSpec &spec, const LaunchRequest &launch) const;

  std::vector<codegen::TensorMapSpec> specs_;
  mutable std::mutex mutex_;
  mutable std::vector<Encoded> last_;  // one per map
};

}  // namespace kdsl::detail
