// row_groups.h - weight rows interleaved in groups of R: each field of a block with its R rows' copies side by side, so that a kernel loads several rows' bytes as one vector
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include <kdsl/formats/quant_blocks.h>

namespace kdsl::formats {

// A matrix of N rows in a block format, grouped by R: group g holds rows gR .. gR + R - 1 (the
// last padded with zero blocks), and its block b of all R rows is R * sizeof(Layout) bytes at
// (g * blocks + b) * R * sizeof(Layout). Inside, each field of the block (a run of bytes the
// kernels read together: the scale, the quants) takes R times its bytes, its rows' copies
// interleaved `grain` bytes at a time: byte i of row r's field goes to
//   field.offset * R + (i / grain) * grain * R + r * grain + i % grain.
// A decode kernel reads a field's `grain` bytes of all R rows as one run of R * grain bytes:
// the quants 4 bytes a row (kGroupedQuantGrain), the f16 factors 2 (R of them, one
// conversion), the scale codes 1 (R bytes, one vector of rows). llama.cpp's CPU back end
// repacks Q4_0 and Q4_K weights at load time for the same reason.
struct GroupedField {
  int offset, bytes, grain;
};
// The quants' grain: 4 bytes a row, so that one 64-byte vector holds 16 rows' 4 bytes and one
// vpdpbusd against 4 broadcast activation bytes gives each row's sum in its own lane.
inline constexpr int kGroupedQuantGrain = 4;
// Where byte `offset` of a row's block goes in its group's block, less the row's own
// r * grain: first + r * grain is its place for row r; the bytes up to the end of its grain
// follow it.
struct GroupedPlace {
  int first, grain;
};
struct RowGroupPlan {
  std::array<GroupedField, 6> fields{};
  int count = 0;
  constexpr GroupedPlace place(int R, int offset) const {
    for (int i = 0; i < count; ++i) {
      const GroupedField &f = fields[size_t(i)];
      if (offset >= f.offset && offset < f.offset + f.bytes) {
        const int within = offset - f.offset;
        return {f.offset * R + (within / f.grain) * f.grain * R + within % f.grain, f.grain};
      }
    }
    throw std::logic_error("row_groups.h: a byte outside every field of the block");
  }
};

// The plan of each format with one; the others' is empty (count 0): they are not grouped.
template <class Layout>
constexpr RowGroupPlan row_group_plan() {
  return {};
}
template <class Layout>
inline constexpr bool has_row_groups = row_group_plan<Layout>().count > 0;

template <>
constexpr RowGroupPlan row_group_plan<BlockQ4_K>() {
  return {{{{offsetof(BlockQ4_K, d), 2, 2}, {offsetof(BlockQ4_K, dmin), 2, 2}, {offsetof(BlockQ4_K, scales), kKScaleSize, 1},
            {offsetof(BlockQ4_K, qs), kQK_K / 2, kGroupedQuantGrain}}},
          4};
}

template <>
constexpr RowGroupPlan row_group_plan<BlockQ5_K>() {
  return {{{{offsetof(BlockQ5_K, d), 2, 2}, {offsetof(BlockQ5_K, dmin), 2, 2}, {offsetof(BlockQ5_K, scales), kKScaleSize, 1},
            {offsetof(BlockQ5_K, qh), kQK_K / 8, kGroupedQuantGrain}, {offsetof(BlockQ5_K, qs), kQK_K / 2, kGroupedQuantGrain}}},
          5};
}
template <>
constexpr RowGroupPlan row_group_plan<BlockQ6_K>() {
  return {{{{offsetof(BlockQ6_K, ql), kQK_K / 2, kGroupedQuantGrain}, {offsetof(BlockQ6_K, qh), kQK_K / 4, kGroupedQuantGrain}, {offsetof(BlockQ6_K, scales), kQK_K / 16, 1},
            {offsetof(BlockQ6_K, d), 2, 2}}},
          4};
}

// Each (row, block, field chunk) of a [rows][blocks] matrix of Layout blocks grouped by R:
// at(stored, grouped, bytes) for the chunk's place as stored and grouped.
template <class Layout, class At>
void for_each_grouped_chunk(int64_t rows, int64_t blocks, int R, At &&at) {
  constexpr RowGroupPlan plan = row_group_plan<Layout>();
  static_assert(plan.count > 0, "row_groups.h: this format has no row-group plan");
  constexpr int64_t S = sizeof(Layout);
  for (int64_t row = 0; row < rows; ++row) {
    const int64_t g = row / R, r = row % R;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t stored = (row * blocks + b) * S, grouped = (g * blocks + b) * R * S;
      for (int i = 0; i < plan.count; ++i) {
        const GroupedField &f = plan.fields[size_t(i)];
        for (int j = 0; j < f.bytes; j += f.grain) at(stored + f.offset + j, grouped + f.offset * R + j * R + r * f.grain, f.grain);
      }
    }
  }
}

// The rows of a [rows][blocks] matrix of Layout blocks, grouped by R as above: `out` takes
// grouped_bytes(rows, blocks, R) bytes, the last group padded with zero bytes.
template <class Layout>
int64_t grouped_bytes(int64_t rows, int64_t blocks, int R) {
  return (rows + R - 1) / R * R * blocks * int64_t(sizeof(Layout));
}
template <class Layout>
void group_rows(const void *in, void *out, int64_t rows, int64_t blocks, int R) {
  auto src = static_cast<const uint8_t *>(in);
  auto dst = static_cast<uint8_t *>(out);
  std::memset(dst, 0, size_t(grouped_bytes<Layout>(rows, blocks, R)));
  for_each_grouped_chunk<Layout>(rows, blocks, R, [&](int64_t stored, int64_t grouped, int n) { std::memcpy(dst + grouped, src + stored, size_t(n)); });
}
// The inverse: a grouped matrix's rows as stored, `out` rows * blocks * sizeof(Layout) bytes.
template <class Layout>
void ungroup_rows(const void *in, void *out, int64_t rows, int64_t blocks, int R) {
  auto src = static_cast<const uint8_t *>(in);
  auto dst = static_cast<uint8_t *>(out);
  for_each_grouped_chunk<Layout>(rows, blocks, R, [&](int64_t stored, int64_t grouped, int n) { std::memcpy(dst + stored, src + grouped, size_t(n)); });
}

}  // namespace kdsl::formats
