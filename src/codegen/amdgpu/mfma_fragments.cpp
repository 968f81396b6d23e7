// mfma_fragments.cpp - the MFMA accumulator's element positions, transcribed from AMD's matrix instruction layouts
#include "codegen/amdgpu/mfma_fragments.h"

#include <kdsl/error.h>

namespace kdsl::codegen::amdgpu {

// Lane l holds column l % n; its VGPRs run down 4 rows at a time, the 64 / n lane groups
// taking consecutive runs of 4 before the next VGPR quadruple starts (mfma_fragments.h).
MfmaCoord<int> mfma_c_element(const MatrixInstruction &mi, int lane, int i) {
  if (mi.m != mi.n || (mi.m != 16 && mi.m != 32) || i < 0 || i >= mfma_c_elements(mi))
    internal_error(std::string("mfma fragments: no accumulator table for ") + mi.name);
  int groups = kMfmaWave / mi.n;
  return {4 * groups * (i / 4) + 4 * (lane / mi.n) + i % 4, lane % mi.n};
}

int mfma_c_register(const gpu::Layout &l, const gpu::RegisterMap &map, const MatrixInstruction &mi, int tm, int tn, int i) {
  MfmaCoord<int> c0 = mfma_c_element(mi, 0, i);
  int row = tm * l.tile(0) + c0.row, col = tn * l.tile(1) + c0.col;
  for (int r = 0; r < map.count; ++r)
    if (map.offset[size_t(r)][0] == row && map.offset[size_t(r)][1] == col) return r;
  return -1;
}

}  // namespace kdsl::codegen::amdgpu
