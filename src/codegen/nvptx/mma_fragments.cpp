// mma_fragments.cpp - mma.sync fragment element positions, transcribed from the PTX ISA
#include "codegen/nvptx/mma_fragments.h"

#include <kdsl/error.h>

namespace kdsl::codegen::nvptx {
namespace {

// The three fragment tables: 16-bit m16n8k16, 8-bit m16n8k32, TF32 m16n8k8.
enum class Table { Bits16, Bits8, Tf32 };

Table table(const MatrixInstruction &mi) {
  if (mi.m == 16 && mi.n == 8) {
    if (mi.k == 16 && dtype_bytes(mi.a) == 2) return Table::Bits16;
    if (mi.k == 32 && dtype_bytes(mi.a) == 1) return Table::Bits8;
    if (mi.k == 8 && mi.tf32) return Table::Tf32;
  }
  internal_error(std::string("mma fragments: no fragment table for ") + mi.name);
}

}  // namespace

// Each case is the ISA's table as written there, not the shared form of the header comment,
// so the tests compare the lowering against the text.
FragmentElement mma_a_element(const MatrixInstruction &mi, int lane, int i) {
  int g = lane >> 2, t = lane % 4;
  if (table(mi) == Table::Tf32) return {i & 1 ? g + 8 : g, t + (i >= 2 ? 4 : 0)};  // a0..a3
  if (table(mi) == Table::Bits16) {  // a0..a7
    int row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
    int col = t * 2 + (i & 1) + (i >= 4 ? 8 : 0);
    return {row, col};
  }
  // a0..a15
  int row = (i < 4 || (i >= 8 && i < 12)) ? g : g + 8;
  int col = t * 4 + (i & 3) + (i >= 8 ? 16 : 0);
  return {row, col};
}

FragmentElement mma_b_element(const MatrixInstruction &mi, int lane, int i) {
  int g = lane >> 2, t = lane % 4;
  if (table(mi) == Table::Tf32) return {t + (i ? 4 : 0), g};              // b0, b1
  if (table(mi) == Table::Bits16) return {t * 2 + (i & 1) + (i >= 2 ? 8 : 0), g};  // b0..b3
  return {t * 4 + (i & 3) + (i >= 4 ? 16 : 0), g};                      // b0..b7
}

FragmentElement mma_c_element(const MatrixInstruction &mi, int lane, int i) {
  table(mi);
  int g = lane >> 2, t = lane % 4;
  return {i < 2 ? g : g + 8, t * 2 + (i & 1)};
}

FragmentElement wgmma_c_element(int thread, int i) {
  int lane = thread % 32, g = lane >> 2, t = lane % 4;
  return {16 * (thread / 32) + g + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * t + (i & 1)};
}

int mma_a_elements(const MatrixInstruction &mi) { return table(mi) == Table::Bits8 ? 16 : table(mi) == Table::Bits16 ? 8 : 4; }
int mma_b_elements(const MatrixInstruction &mi) { return table(mi) == Table::Bits8 ? 8 : table(mi) == Table::Bits16 ? 4 : 2; }

}  // namespace kdsl::codegen::nvptx
