// expand_tile_accesses.h - rewrites tile loads and stores through a tensor descriptor into index arithmetic and one masked load or store
#pragma once
#include <functional>

#include "ir/ir.h"

namespace kdsl::passes {

// Replaces every TileLoad and TileStore for which `keep` is false (every one where keep is
// empty) by the ops that compute it everywhere: the tile's row and column indices, its
// pointers (base + row * row_stride + col, the offsets in i64) and a load
// masked to 0 <= row < rows and 0 <= col < cols with 0 elsewhere (the load keeps the
// TileLoad's result), or a store masked the same way.
void expand_tile_accesses(ir::Function &fn, const std::function<bool(const ir::Op &)> &keep = {});

}  // namespace kdsl::passes
