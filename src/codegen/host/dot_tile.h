// dot_tile.h - the register tile of the host's dots (f32 and bytes): rows of C by vectors of columns, from a cost model of the loop it becomes
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
  // The vector ALU, where the products' other instructions compete for it (0 ports: not
  // modeled, as for the f32 tiles, whose FMAs are the whole of their arithmetic). A byte dot's
  // products each take an i16 add besides the multiply, and on AMD's Zen a broadcast from memory
  // issues on an FP pipe as well as a load port (llvm-mca's znver2/znver3 models: FP1 or FP2),
  // where Intel's cores load it on a load port alone. Counting neither, the model chose 13 rows
  // by one vector for the prefill tiles' byte dots, a broadcast a product, and those kernels
  // ran slowest of the shapes tried (bench/RESULTS.md, 2026-12-07, "Byte-dot tiles that count
  // the broadcasts").
  int alu_ports = 0;
  int multiplies_per_product = 1;  // on the FMA ports (2: SignedMaddubs' vpmaddubsw and vpmaddwd)
  int alu_ops_per_product = 0;     // ALU instructions a product besides its multiplies
  int alu_ops_per_row = 0;         // a k of each row of the tile (A's broadcast, its magnitude)
  int alu_ops_per_b_vector = 0;    // a k of each vector of B (its magnitude)
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
// costs the most of its FMAs over the FMA ports, its loads over the load ports, its vector ALU
// instructions over the ALU ports where the machine models them, and one FMA latency (its
// accumulators' chains run one after another; tiles do not overlap, each being a loop of its
// own). Where the ALU is modeled, of tiles as fast the one with the fewest loads and broadcasts
// a product wins (they share the load ports with C's and the spills' traffic, which the model
// does not count), then the taller. Only tiles whose accumulators, one row of B (none for one
// row of C: its FMAs take each B vector from memory) and one broadcast fit in the registers are
// considered.
// Where C has rows enough, one row by the whole of N loses: it loads more than it multiplies
// and keeps too few chains in flight to hide the latency.
DotTile choose_dot_tile(int64_t M, int64_t N, const DotMachine &machine);

}  // namespace kdsl::codegen
