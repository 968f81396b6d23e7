// tensor_map_json.h - a kernel's TMA tensor maps (codegen/tensor_map.h) as its cache entry's "tensor_maps" metadata, and back
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/tensor_map.h"

namespace kdsl::detail {

// An array with one object per map, in the kernel's parameter order:
//   {"base": 0, "rows": F, "cols": F, "row_stride": F, "dtype": "f16", "box": [box_rows, box_cols], "swizzle": 128}
// where each F is {"param": <argument index>} or {"value": <elements>}.
nlohmann::json tensor_maps_to_json(const std::vector<codegen::TensorMapSpec> &maps);

// The maps back, every field checked: argument indices >= 0, extents that are integers, an
// element type TMA copies, box extents in [1, 256] whose row is a multiple of 16 bytes, a
// swizzle of 0, 32, 64 or 128 bytes that spans the box's row. Throws kdsl::Error naming `entry`
// (the cache entry as errors name it: "kernel (symbol)") and the field ("tensor_maps[1].box"),
// saying to remove the entry from the cache directory.
std::vector<codegen::TensorMapSpec> tensor_maps_from_json(const nlohmann::json &maps, const std::string &entry);

}  // namespace kdsl::detail
