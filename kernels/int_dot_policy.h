// int_dot_policy.h - which weight formats the CPU multiplies by integer dot products, and with which policy
#pragma once
#include <cstdint>
#include <type_traits>

#include <kdsl/device.h>

#include "kernels/block32_int_tiles.h"
#include "kernels/decoded_int_dot.h"
#include "kernels/kquant_int_dot.h"
#include "kernels/matvec_int8.h"

namespace kdsl::kernels {

// The integer-dot policy of a weight format, where it has one (void: the format's products
// stay on the f32 dequantize path). Q8_0 and Q4_0 (matvec_int8.h) meet 32-value activation
// blocks with no sums; the others (matvec_int8_sums.h) need the activations' group sums for
// their offsets: the k-quants per 256 values (kquant_int_dot.h), Q4_1, Q5_0 and Q5_1 per 32
// (decoded_int_dot.h).
//
// name: the format in its tuned points' names (library_int_dot.cpp).
// few_rows_launch: the most rows of x one few-row launch takes (row_chunks.h cuts a few rows
// into power-of-two launches no larger). Per format because the multi-row kernels' cost per
// row is not the decode kernel's: Q8_0's and Q4_0's programs take 2 rows each
// (library_int_dot.cpp) at less than a decode row's cost a row, so any launch is worth it; the
// k-quants' 4-row kernel is the best of theirs (KDSL_PROFILE; bench/RESULTS.md, 2026-12-03, the
// few-row launches entry and "integer-dot kernels: four rows a vpdpbusd").
// row_group_ymm: the k-quants' row_group on a CPU whose integer vectors are 32 bytes (no
// AVX-512): 8, one 4-byte piece of each row in a ymm, where 16 rows' pieces took two and
// their kernels spilled (bench/RESULTS.md, 2026-12-06, "Q4_K and Q5_K decode without VNNI").
// row_group: the rows a matrix of F is grouped by for the CPU's decode and few-row kernels
// (formats/row_groups.h; matvec_grouped_sums, matvec_grouped_int8), where F has that layout:
// 16 (ahead of 8 for Q4_K, even for Q6_K: bench/RESULTS.md, 2026-12-05, "Weights grouped by
// 16 rows for the CPU's decode"). Q8_0 too: with VNNI its decode measured the same either way,
// and on AVX2 alone its products measured faster grouped, from cache (bench/RESULTS.md,
// 2026-12-06, "Q8_0 grouped by 16 rows").
// without_vnni: the policy the grouped decode and few-row kernels take on a CPU without VNNI,
// where it is not `type` (Q4_K and Q5_K: sub-blocks scaled by their i32 codes,
// kquant_int_dot.h).
// tiles: the format's prefill tiles (has_prefill_tiles below).
// grouped_prefetch: how many bytes ahead the grouped decode and few-row kernels ask for their
// weights (matvec_grouped_sums' PREFETCH), where not kGroupedPrefetch: 0 for Q5_K, whose
// products compute longest a byte and measured the same with it and without, where the others'
// measured faster (bench/RESULTS.md, 2026-12-07, "A prefetch distance for grouped decode",
// and "Q6_K's grouped decode prefetches too"). Twice the distance measured no faster.
inline constexpr int kEveryRow = 1 << 30;  // default_int_dot_rows' "every row"
inline constexpr int64_t kGroupedPrefetch = 2048;

template <class F>
struct int_dot_policy {
  using type = void;
};
template <>
struct int_dot_policy<Q8_0Format> {
  using type = Q8_0IntDot;
  static constexpr const char *name = "q8_0";
  static constexpr int few_rows_launch = 16;
  static constexpr int row_group = 16;
  using tiles = Q8_0Tiles;
};
template <>
struct int_dot_policy<Q4_0Format> {
  using type = Q4_0IntDot;
  static constexpr const char *name = "q4_0";
  static constexpr int few_rows_launch = 16;
  static constexpr int row_group = 16;
  using tiles = Q4_0Tiles;
};
template <>
struct int_dot_policy<IQ4_NLFormat> {
  using type = IQ4_NLIntDot;
  static constexpr const char *name = "iq4_nl";
  static constexpr int few_rows_launch = 16;
  static constexpr int row_group = 16;
  using tiles = IQ4_NLTiles;
};
template <>
struct int_dot_policy<Q4_KFormat> {
  using type = Q4_KIntDot;
  using without_vnni = Q4_KIntDotI32Scales;
  static constexpr const char *name = "q4_k";
  static constexpr int few_rows_launch = 4;
  using tiles = type;
  static constexpr int row_group = 16;
  static constexpr int row_group_ymm = 8;
};
template <>
struct int_dot_policy<Q5_KFormat> {
  using type = Q5_KIntDot;
  using without_vnni = Q5_KIntDotI32Scales;
  static constexpr const char *name = "q5_k";
  static constexpr int few_rows_launch = 4;
  using tiles = type;
  static constexpr int row_group = 16;
  static constexpr int64_t grouped_prefetch = 0;
  static constexpr int row_group_ymm = 8;
};
template <>
struct int_dot_policy<Q6_KFormat> {
  using type = Q6_KIntDot;
  static constexpr const char *name = "q6_k";
  static constexpr int few_rows_launch = 4;
  using tiles = type;
  static constexpr int row_group = 16;
  static constexpr int row_group_ymm = 8;
};
template <>
struct int_dot_policy<Q4_1Format> {
  using type = Q4_1IntDot;
  static constexpr const char *name = "q4_1";
  static constexpr int few_rows_launch = 4;
  static constexpr int row_group = 16;
  using tiles = type;
};
template <>
struct int_dot_policy<Q5_0Format> {
  using type = Q5_0IntDot;
  static constexpr const char *name = "q5_0";
  static constexpr int few_rows_launch = 4;
  static constexpr int row_group = 16;
  using tiles = type;
};
template <>
struct int_dot_policy<Q5_1Format> {
  using type = Q5_1IntDot;
  static constexpr const char *name = "q5_1";
  static constexpr int few_rows_launch = 4;
  static constexpr int row_group = 16;
  using tiles = type;
};

// The rows a matrix of format F is grouped by for its integer-dot kernels on `cpu` (1: as
// stored): the policy's row_group, or its row_group_ymm on a CPU without AVX-512.
template <class F>
int row_group_on(const Device &cpu) {
  using Policy = int_dot_policy<F>;
  if constexpr (requires { Policy::row_group_ymm; }) {
    if (!cpu.has_cpu_feature("avx512bw")) return Policy::row_group_ymm;
  }
  if constexpr (requires { Policy::row_group; }) return Policy::row_group;
  else return 1;
}

// The bytes ahead format F's grouped kernels prefetch (0: none).
template <class F>
constexpr int64_t grouped_prefetch() {
  if constexpr (requires { int_dot_policy<F>::grouped_prefetch; }) return int_dot_policy<F>::grouped_prefetch;
  else return kGroupedPrefetch;
}

// Whether format F has byte-dot prefill tiles (matmul_int_tiles.h with the policy's `tiles`:
// x's quants by a transposed tile of weight quants, the host's register tiles of vpmaddubsw or
// vpdpbusd). A tiles policy is the format's integer-dot policy where that has a tile_dot, or
// one of its own. Every format with an integer-dot policy has them.
template <class F>
inline constexpr bool has_prefill_tiles = requires { typename int_dot_policy<F>::tiles; };

// Whether the host lowering gives dot4 one instruction on this CPU (vpdpbusd: AVX-VNNI, or
// AVX512-VNNI with VL), as src/codegen/host/int_dot.cpp chooses it.
inline bool has_vnni(const Device &cpu) {
  return cpu.has_cpu_feature("avxvnni") || (cpu.has_cpu_feature("avx512vnni") && cpu.has_cpu_feature("avx512vl"));
}

// Whether the host lowering gives byte dots vector code on this CPU: vpmaddubsw (AVX2) or
// vpdpbusd (VNNI) (src/codegen/host/int_dot.cpp, int_dot_tile.cpp). Without AVX2 they go
// element by element.
inline bool has_byte_dot_vectors(const Device &cpu) { return cpu.has_cpu_feature("avx2"); }

// Whether format F's products of more than a few rows take its tiles on `cpu` rather than the
// f32 tiles: where it has them and the CPU has byte dots' vector code. Every format's tiles
// beat the f32 tiles with VNNI (bench/RESULTS.md, 2026-12-05, "Every 32-value format's prefill
// on byte-dot tiles with VNNI") and with AVX2 alone: the k-quants' (2026-12-05, "byte dots as
// register tiles"), and since s8 x s8 has vpsignb and vpmaddubsw there (int_dot_tile.h,
// SignedMaddubs) the 32-value formats' too (2026-12-06, "Every format's prefill on byte-dot
// tiles without VNNI").
template <class F>
bool takes_prefill_tiles(const Device &cpu) {
  if constexpr (!has_prefill_tiles<F>) return false;
  else return has_byte_dot_vectors(cpu);
}

// Where a format takes no tiles, its integer kernels take decode and few-row products (up to
// 16 rows, where they win) and the f32 tiles the rest: past 16 rows the f32 tiles beat the
// dot4 prefill programs without VNNI (bench/RESULTS.md, 2026-12-04, "Integer-dot prefill
// without VNNI").
inline constexpr int kIntDotRowsWithoutTiles = 16;

// The most rows of x a default Library on `cpu` sends through format F's integer kernels (0:
// F has none): every row where F takes its tiles, else kIntDotRowsWithoutTiles. The Library
// and the tests read this one rule.
template <class F>
int default_int_dot_rows(const Device &cpu) {
  if constexpr (std::is_void_v<typename int_dot_policy<F>::type>) return 0;
  else return takes_prefill_tiles<F>(cpu) ? kEveryRow : kIntDotRowsWithoutTiles;
}

}  // namespace kdsl::kernels
