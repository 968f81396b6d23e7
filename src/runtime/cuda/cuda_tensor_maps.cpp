// cuda_tensor_maps.cpp - TMA tensor maps from a launch's argument slots: checked against TMA's rules, encoded by the driver, reused while the values stay
#include "runtime/cuda/cuda_tensor_maps.h"

#include <fmt/format.h>

#include <string>
#include <tuple>

#include <kdsl/error.h>

#include "codegen/tensor_map_limits.h"
#include "runtime/checked_mode.h"

namespace kdsl::detail {
namespace {

std::string argument_text(const LaunchRequest &r, int index) {
  if (index >= 0 && size_t(index) < r.kernel.params.size())
    return fmt::format("argument {} ({})", index, param_type_text(r.kernel.params[size_t(index)]));
  return fmt::format("argument {}", index);
}

// Where a field's value came from, for errors: "argument 3 (Scalar<i32>)" or "the constant 64".
std::string source_text(const LaunchRequest &r, const codegen::TensorMapField &f) {
  return f.param >= 0 ? argument_text(r, f.param) : fmt::format("the constant {}", f.value);
}

}  // namespace

int tensor_map_data_type(DType t) {
  switch (t) {
    case DType::F16: return cuda::kTensorMapFloat16;
    case DType::BF16: return cuda::kTensorMapBfloat16;
    case DType::F32: return cuda::kTensorMapFloat32;
    case DType::I8:
    case DType::U8:
    case DType::F8E4M3: return cuda::kTensorMapUint8;  // TMA copies bytes; wgmma is told they are e4m3
    case DType::I16: return cuda::kTensorMapUint16;
    case DType::I32: return cuda::kTensorMapInt32;
    case DType::U32: return cuda::kTensorMapUint32;
    case DType::I64: return cuda::kTensorMapInt64;
    case DType::Bool: return -1;
  }
  return -1;
}

int tensor_map_swizzle(int bytes) {
  switch (bytes) {
    case 0: return cuda::kTensorMapSwizzleNone;
    case 32: return cuda::kTensorMapSwizzle32B;
    case 64: return cuda::kTensorMapSwizzle64B;
    case 128: return cuda::kTensorMapSwizzle128B;
    default: return -1;
  }
}

CudaTensorMaps::CudaTensorMaps(std::vector<codegen::TensorMapSpec> specs) : specs_(std::move(specs)), last_(specs_.size()) {}

CudaTensorMaps::Values CudaTensorMaps::values(const codegen::TensorMapSpec &s, const LaunchRequest &r) const {
  // The indices come from the cache entry: one past the kernel's arguments would read past its slots.
  auto slot = [&](int index) {
    if (index < 0 || size_t(index) >= r.count)
      throw Error(fmt::format("kernel '{}': its cache entry's tensor map reads argument {}, but the kernel takes {} arguments; the entry does "
                              "not belong to this kernel: remove it from the cache directory",
                              r.kernel.name, index, r.count));
    return r.slots[index];
  };
  // Integer slots hold the value sign-extended to 64 bits (kernel.cpp packs ArgValue::bits).
  auto read = [&](const codegen::TensorMapField &f) { return f.param >= 0 ? int64_t(slot(f.param)) : f.value; };
  Values v{slot(s.base), read(s.rows), read(s.cols), read(s.row_stride)};
  if (s.rank == 3) v.planes = read(s.planes), v.plane_stride = read(s.plane_stride);
  return v;
}

void CudaTensorMaps::encode(const cuda::Driver &driver, const LaunchRequest &r, cuda::CUtensorMap *out,
                            const std::function<StandIns()> &stand_ins) const {
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < specs_.size(); ++i) {
    const codegen::TensorMapSpec &s = specs_[i];
    Encoded &last = last_[i];
    Values v = values(s, r);
    if (last.valid && last.values == v) {
      out[i] = last.map;
      continue;
    }

    const std::string base = argument_text(r, s.base);
    auto refuse = [&](const std::string &needs, const std::string &found) {
      throw Error(fmt::format("kernel '{}': {} is read with TMA (a tensor map), which needs {}; found {}", r.kernel.name, base, needs, found));
    };
    // Argument types come from the kernel; a map over another kind of argument is a mismatched entry.
    auto is_integer_argument = [&](const codegen::TensorMapField &f) {
      return f.param < 0 || (size_t(f.param) < r.kernel.params.size() && !r.kernel.params[size_t(f.param)].is_ptr &&
                             is_integer(r.kernel.params[size_t(f.param)].elem));
    };
    if (size_t(s.base) >= r.kernel.params.size() || !r.kernel.params[size_t(s.base)].is_ptr || !is_integer_argument(s.rows) ||
        !is_integer_argument(s.cols) || !is_integer_argument(s.row_stride) || !is_integer_argument(s.planes) || !is_integer_argument(s.plane_stride))
      throw Error(fmt::format("kernel '{}': its cache entry's tensor map {} names {} as its base and {}, {}, {} as its extents, which this "
                              "kernel's arguments are not (a pointer, then integers); remove the entry from the cache directory",
                              r.kernel.name, i, base, source_text(r, s.rows), source_text(r, s.cols), source_text(r, s.row_stride)));

    const int bytes = dtype_bytes(s.elem);
    for (auto [name, value, field] : {std::tuple{"rows", v.rows, &s.rows}, std::tuple{"cols", v.cols, &s.cols}, std::tuple{"planes", v.planes, &s.planes}})
      if (!codegen::tensor_map_extent_ok(value)) refuse(fmt::format("{} in [0, 2^32]", name), fmt::format("{} ({})", value, source_text(r, *field)));
    // An empty tensor is encoded over a stand-in: its own address and strides are never read.
    const bool empty = codegen::tensor_map_empty(v.rows, v.cols) || v.planes == 0;
    if (!empty && !codegen::tensor_map_address_ok(v.address))
      refuse("its address 16-byte aligned",
             fmt::format("{:#x}, {} bytes past a 16-byte boundary (pass a pointer a multiple of {} {} elements into an aligned allocation)", v.address,
                         v.address % 16, 16 / bytes, dtype_name(s.elem)));
    if (!empty && !codegen::tensor_map_stride_ok(v.row_stride, bytes))
      refuse("its row stride a positive multiple of 16 bytes below 2^40 bytes",
             fmt::format("{} {} elements{} ({})", v.row_stride, dtype_name(s.elem),
                         codegen::tensor_map_stride_fits(v.row_stride, bytes) ? fmt::format(" = {} bytes", v.row_stride * bytes) : "",
                         source_text(r, s.row_stride)));
    if (s.rank == 3 && !empty && !codegen::tensor_map_stride_ok(v.plane_stride, bytes))
      refuse("its plane stride a positive multiple of 16 bytes below 2^40 bytes",
             fmt::format("{} {} elements ({})", v.plane_stride, dtype_name(s.elem), source_text(r, s.plane_stride)));
    if (!driver.cuTensorMapEncodeTiled)
      refuse("a CUDA 12 driver", fmt::format("{}, which lacks cuTensorMapEncodeTiled (update the NVIDIA driver)", driver.library));

    // TMA lists dimensions innermost first: cols, then rows `row_stride` elements apart, then
    // (rank 3) planes `plane_stride` apart, a box one plane deep. An empty tensor: its
    // stand-in, one element.
    const uint64_t address = !empty ? v.address : s.written ? stand_ins().written : stand_ins().read;
    const uint64_t stand_in = codegen::kTensorMapStandInBytes;
    const uint64_t dims[3] = {empty ? 1 : uint64_t(v.cols), empty ? 1 : uint64_t(v.rows), empty ? 1 : uint64_t(v.planes)};
    const uint64_t strides[2] = {empty ? stand_in : uint64_t(v.row_stride) * uint64_t(bytes), empty ? stand_in : uint64_t(v.plane_stride) * uint64_t(bytes)};
    const uint32_t box[3] = {uint32_t(s.box_cols), uint32_t(s.box_rows), 1};
    const uint32_t element_strides[3] = {1, 1, 1};
    cuda::CUtensorMap map;  // kept only once encoded: a failed call leaves the last map whole
    cuda::CUresult result = driver.cuTensorMapEncodeTiled(&map, tensor_map_data_type(s.elem), unsigned(s.rank), reinterpret_cast<void *>(address), dims, strides,
                                                          box, element_strides, cuda::kTensorMapInterleaveNone, tensor_map_swizzle(s.swizzle_bytes),
                                                          cuda::kTensorMapL2Promotion128B, cuda::kTensorMapOobFillZeros);
    if (result != 0) {
      std::string why;
      try {
        driver.check(result, "cuTensorMapEncodeTiled");
      } catch (const Error &e) {
        why = e.what();
      }
      throw Error(fmt::format("kernel '{}': encoding the tensor map of {} ({} x {} {} elements, rows {} bytes apart, box {} x {}, swizzle {} bytes) "
                              "failed: {}",
                              r.kernel.name, base, v.rows, v.cols, dtype_name(s.elem), strides[0], s.box_rows, s.box_cols, s.swizzle_bytes, why));
    }
    last = {map, v, true};
    out[i] = map;
  }
}

}  // namespace kdsl::detail
