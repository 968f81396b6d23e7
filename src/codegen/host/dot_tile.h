// dot_tile.h - the register tile of the host's f32 dot: rows of C by vectors of columns, from a cost model of the loop it becomes
#pragma once
#include <cstdint>

namespace kdsl::codegen {

// The vector registers the tile lives in, and what the core does with them.
struct DotMachine {
  int registers = 16;   // vector registers (AVX2: 16, AVX-512: 32)
  int lanes = 8;        // f32 lanes a register
  int fma_ports = 2;    // vector FMAs issued a cycle
  int load_ports = 2;   // loads issued a cycle
  // Cycles before an FMA's result feeds the next on the same accumulator, with one of slack:
  // 5 on Zen 2 (4 on recent Intel cores), but 10 chains, exactly enough at 5, measured slower
  // than 12 there (bench/RESULTS.md, 2026-12-05, the host dot's register tiles).
  int fma_latency = 6;
  int registers_per_b_vector = 1;  // a row of B's registers a vector (2: a byte dot's B and its magnitude)
};

// C[M, N] += A[M, K] . B[K, N] is computed as tiles of `rows` rows of C by `vectors` registers
// of its columns: each tile's accumulators stay in registers across k, and each k loads the
// tile's `vectors` of row k of B and broadcasts `rows` elements of A. N is cut into panels of
// `vectors` registers (the last may be narrower), M into strips of `rows` (the last may be
// shorter).
struct DotTile {
  int rows = 1;
  int vectors = 1;
};

// The tile with the fewest estimated cycles a k over all of C, where a strip-by-panel tile
// costs the most of its FMAs over the FMA ports, its loads over the load ports, and one FMA
// latency (its accumulators' chains run one after another; tiles do not overlap, each being a
// loop of its own). Only tiles whose accumulators, one row of B (none for one row of C: its
// FMAs take each B vector from memory) and one broadcast fit in the registers are considered.
// Where C has rows enough, one row by the whole of N loses: it loads more than it multiplies
// and keeps too few chains in flight to hide the latency.
DotTile choose_dot_tile(int64_t M, int64_t N, const DotMachine &machine);

}  // namespace kdsl::codegen
