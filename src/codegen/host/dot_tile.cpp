// dot_tile.cpp - the host dots' register tile (f32 and byte dots), chosen by counting multiplies, loads, vector ALU work and latency per k
#include "codegen/host/dot_tile.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kdsl::codegen {
namespace {

// Estimated cycles a k for all of C under tile `t`.
double cycles_per_k(int64_t M, int64_t chunks, DotTile t, const DotMachine &m) {
  auto tile_cycles = [&](int64_t rows, int64_t vectors) {
    const double fmas = double(rows * vectors), loads = double(rows + vectors);
    double cycles = std::max({fmas * m.multiplies_per_product / m.fma_ports, loads / m.load_ports, double(m.fma_latency)});
    if (m.alu_ports > 0) {
      const double alu = fmas * (m.multiplies_per_product + m.alu_ops_per_product) + double(rows * m.alu_ops_per_row + vectors * m.alu_ops_per_b_vector);
      cycles = std::max(cycles, alu / m.alu_ports);
    }
    return cycles;
  };
  double total = 0;
  for (int64_t n = 0; n < chunks; n += t.vectors) {
    const int64_t vectors = std::min<int64_t>(t.vectors, chunks - n);
    total += double(M / t.rows) * tile_cycles(t.rows, vectors);
    if (M % t.rows) total += tile_cycles(M % t.rows, vectors);
  }
  return total;
}

}  // namespace

DotTile choose_dot_tile(int64_t M, int64_t N, const DotMachine &machine) {
  const int64_t chunks = (N + machine.lanes - 1) / machine.lanes;  // registers a row of C takes
  DotTile best;
  double best_cycles = std::numeric_limits<double>::infinity();
  for (int64_t vectors = 1; vectors <= chunks; ++vectors) {
    for (int64_t rows = 1; rows <= M; ++rows) {
      // Accumulators, a broadcast, and the row of B, which a one-row tile reads straight into
      // its FMAs (each B vector is used once) rather than keeping in registers.
      const int64_t b_registers = rows > 1 ? vectors * machine.registers_per_b_vector : 0;
      if (rows * vectors + b_registers + 1 > machine.registers) break;
      const DotTile t{int(rows), int(vectors)};
      const double c = cycles_per_k(M, chunks, t, machine);
      // Ties go to the tile with fewer loads a product where the ALU is modeled, then to the
      // taller tile: fewer passes over B, fewer loop headers.
      const bool tie = std::abs(c - best_cycles) <= 1e-9 * c;  // sums of the same fractions, rounded apart
      bool better = !tie && c < best_cycles;
      if (tie) {
        const int64_t products = rows * vectors, best_products = int64_t(best.rows) * best.vectors;
        const int64_t loads = rows + vectors, best_loads = int64_t(best.rows) + best.vectors;
        if (machine.alu_ports > 0 && loads * best_products != best_loads * products) better = loads * best_products < best_loads * products;
        else better = products > best_products;
      }
      if (better) best = t, best_cycles = c;
    }
  }
  return best;
}

}  // namespace kdsl::codegen
