// row_groups.h - weight rows interleaved in groups of R: each field of a block with its R rows' copies side by side, so that a kernel loads several rows' bytes as one vector
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <kdsl/formats/grouped_bits.h>
#include <kdsl/formats/quant_blocks.h>

namespace kdsl::formats {

// A matrix of N rows in a block format, grouped by R: group g holds rows gR .. gR + R - 1 (the
// last padded with zero blocks), and its block b of all R rows is R * sizeof(Layout) bytes at
// (g * blocks + b) * R * sizeof(Layout). Inside, each field of the block (a run of bytes the
// kernels read together: the scales, a half of the quants) takes R times its bytes, in the
// plan's order of fields (which need not be the block's), its rows' copies interleaved
// `grain` bytes at a time: byte i of row r's field goes to
//   start * R + (i / grain) * grain * R + r * grain + i % grain,
// `start` the bytes of the fields before it in the plan. A decode kernel reads a field's
// `grain` bytes of all R rows as one run of R * grain bytes: the quants 4 bytes a row
// (kGroupedQuantGrain), the f16 factors 2 (R of them, one conversion), the scale codes 1 (R
// bytes, one vector of rows); the fields lie in the order the kernel reads them, so that it
// walks each group's block forward. llama.cpp's CPU back end repacks Q4_0 and Q4_K weights at
// load time for the same reason.
struct GroupedField {
  int offset, bytes, grain;  // in the block as stored
};
// The quants' grain: 4 bytes a row, so that one 64-byte vector holds 16 rows' 4 bytes and one
// vpdpbusd against 4 broadcast activation bytes gives each row's sum in its own lane.
inline constexpr int kGroupedQuantGrain = 4;
// Where byte `offset` of a row's block goes in its group's block, less the row's own
// r * grain: first + r * grain is its place for row r; the `room` bytes up to the end of its
// grain follow it.
struct GroupedPlace {
  int first, grain, room;
};
struct RowGroupPlan {
  std::array<GroupedField, 8> fields{};
  int count = 0;
  BlockBits block_bits = BlockBits::AsStored;
  // Field i's first byte in a group's block of R rows.
  constexpr int start(int R, int i) const {
    int bytes = 0;
    for (int j = 0; j < i; ++j) bytes += fields[size_t(j)].bytes;
    return bytes * R;
  }
  constexpr GroupedPlace place(int R, int offset) const {
    for (int i = 0; i < count; ++i) {
      const GroupedField &f = fields[size_t(i)];
      if (offset >= f.offset && offset < f.offset + f.bytes) {
        const int within = offset - f.offset;
        return {start(R, i) + (within / f.grain) * f.grain * R + within % f.grain, f.grain, f.grain - within % f.grain};
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
          5,
          BlockBits::FiveBitBytes};
}
// Q8_0, Q4_0 and IQ4_NL: the scales, then the quants.
template <>
constexpr RowGroupPlan row_group_plan<BlockQ8_0>() {
  return {{{{offsetof(BlockQ8_0, d), 2, 2}, {offsetof(BlockQ8_0, qs), kQK8_0, kGroupedQuantGrain}}}, 2};
}
template <>
constexpr RowGroupPlan row_group_plan<BlockQ4_0>() {
  return {{{{offsetof(BlockQ4_0, d), 2, 2}, {offsetof(BlockQ4_0, qs), kQK4_0 / 2, kGroupedQuantGrain}}}, 2};
}
template <>
constexpr RowGroupPlan row_group_plan<BlockIQ4_NL>() {
  return {{{{offsetof(BlockIQ4_NL, d), 2, 2}, {offsetof(BlockIQ4_NL, qs), kQK4_NL / 2, kGroupedQuantGrain}}}, 2};
}

// Q4_1, Q5_0 and Q5_1: the f16 factors, the fifth bits (Q5_0 and Q5_1 in five-bit bytes,
// grouped_bits.h), then the quants.
template <>
constexpr RowGroupPlan row_group_plan<BlockQ4_1>() {
  return {{{{offsetof(BlockQ4_1, d), 2, 2}, {offsetof(BlockQ4_1, m), 2, 2}, {offsetof(BlockQ4_1, qs), kQK4_1 / 2, kGroupedQuantGrain}}}, 3};
}
template <>
constexpr RowGroupPlan row_group_plan<BlockQ5_0>() {
  return {{{{offsetof(BlockQ5_0, d), 2, 2}, {offsetof(BlockQ5_0, qh), 4, 4}, {offsetof(BlockQ5_0, qs), kQK5_0 / 2, kGroupedQuantGrain}}},
          3,
          BlockBits::FiveBitBytes};
}
template <>
constexpr RowGroupPlan row_group_plan<BlockQ5_1>() {
  return {{{{offsetof(BlockQ5_1, d), 2, 2},
            {offsetof(BlockQ5_1, m), 2, 2},
            {offsetof(BlockQ5_1, qh), 4, 4},
            {offsetof(BlockQ5_1, qs), kQK5_1 / 2, kGroupedQuantGrain}}},
          4,
          BlockBits::FiveBitBytes};
}

// Q6_K's fields in the order its block_dot (kquant_int_dot.h) reads them: the scale codes and
// d, then for each half (128 values) its qh bytes and then its ql bytes, all in six-bit bytes.
template <>
constexpr RowGroupPlan row_group_plan<BlockQ6_K>() {
  constexpr int ql = offsetof(BlockQ6_K, ql), qh = offsetof(BlockQ6_K, qh), g = kGroupedQuantGrain;
  return {{{{offsetof(BlockQ6_K, scales), kQK_K / 16, 1},
            {offsetof(BlockQ6_K, d), 2, 2},
            {qh, kQK_K / 8, g},
            {ql, kQK_K / 4, g},
            {qh + kQK_K / 8, kQK_K / 8, g},
            {ql + kQK_K / 4, kQK_K / 4, g}}},
          6,
          BlockBits::SixBitBytes};
}

namespace detail {

// One field's `bytes` bytes of the `rows` (<= R) rows of one block of a group, moved between the
// rows' blocks as stored (`row_block[r]`) and the group's block (`group_field`: the field's place
// in it), G bytes at a time; the grain a compile-time constant, so each move is one load and
// one store.
template <int G>
void move_field(uint8_t *const *row_block, uint8_t *group_field, int offset, int bytes, int R, int rows, bool to_groups) {
  // Row by row: each row's field is one run of bytes, read or written in order.
  for (int r = 0; r < rows; ++r) {
    uint8_t *stored = row_block[r] + offset, *grouped = group_field + r * G;
    if (to_groups)
      for (int j = 0; j < bytes; j += G) std::memcpy(grouped + j * R, stored + j, G);
    else
      for (int j = 0; j < bytes; j += G) std::memcpy(stored + j, grouped + j * R, G);
  }
}

// Field I of one block of a group, its grain and place constants (the plan is
// constexpr), so that each move is a fixed-size load and store.
template <class Layout, size_t I>
void move_block_field(uint8_t *const *row_block, uint8_t *group_block, int R, int rows, bool to_groups) {
  constexpr RowGroupPlan plan = row_group_plan<Layout>();
  constexpr GroupedField f = plan.fields[I];
  uint8_t *field = group_block + plan.start(1, int(I)) * R;
  static_assert(f.grain == 1 || f.grain == 2 || f.grain == 4, "row_groups.h: grains of 1, 2 or 4 bytes");
  move_field<f.grain>(row_block, field, f.offset, f.bytes, R, rows, to_groups);
}
template <class Layout, size_t... I>
void move_block(std::index_sequence<I...>, uint8_t *const *row_block, uint8_t *group_block, int R, int rows, bool to_groups) {
  (move_block_field<Layout, I>(row_block, group_block, R, rows, to_groups), ...);
}

// Every block of groups [first, last) of a [rows][blocks] matrix of Layout blocks moved between
// rows as stored (`stored`) and grouped by R (`grouped`).
template <class Layout>
void move_groups(uint8_t *stored, uint8_t *grouped, int64_t rows, int64_t blocks, int R, int64_t first, int64_t last, bool to_groups) {
  constexpr RowGroupPlan plan = row_group_plan<Layout>();
  static_assert(plan.count > 0, "row_groups.h: this format has no row-group plan");
  constexpr int64_t S = sizeof(Layout);
  std::array<uint8_t *, 64> row_block{};
  if (R > int(row_block.size())) throw std::logic_error("row_groups.h: groups of more than 64 rows");
  constexpr bool rewritten = plan.block_bits != BlockBits::AsStored;
  // Where a block is rewritten on its way to the group, each row's goes through a copy (the
  // stored matrix is the caller's, read only); on the way back it is rewritten in place.
  std::array<std::array<uint8_t, rewritten ? S : 1>, 64> copies;
  for (int64_t g = first; g < last; ++g) {
    const int n = int(std::min<int64_t>(R, rows - g * R));
    uint8_t *group_block = grouped + g * blocks * R * S;
    for (int64_t b = 0; b < blocks; ++b) {
      for (int r = 0; r < n; ++r) row_block[size_t(r)] = stored + ((g * R + r) * blocks + b) * S;
      if constexpr (rewritten) {
        if (to_groups)
          for (int r = 0; r < n; ++r) {
            std::memcpy(copies[size_t(r)].data(), row_block[size_t(r)], S);
            rewrite_block_bits<Layout>(copies[size_t(r)].data(), plan.block_bits, true);
            row_block[size_t(r)] = copies[size_t(r)].data();
          }
      }
      move_block<Layout>(std::make_index_sequence<size_t(plan.count)>(), row_block.data(), group_block, R, n, to_groups);
      if constexpr (rewritten) {
        if (!to_groups)
          for (int r = 0; r < n; ++r) rewrite_block_bits<Layout>(row_block[size_t(r)], plan.block_bits, false);
      }
      group_block += R * S;
    }
  }
}

}  // namespace detail

// The rows of a [rows][blocks] matrix of Layout blocks, grouped by R as above: `out` takes
// grouped_bytes(rows, blocks, R) bytes, the last group padded with zero bytes.
template <class Layout>
int64_t grouped_bytes(int64_t rows, int64_t blocks, int R) {
  return (rows + R - 1) / R * R * blocks * int64_t(sizeof(Layout));
}
// Groups [first, last) of them (all by default). Groups are independent: a caller may split
// them among threads.
template <class Layout>
void group_rows(const void *in, void *out, int64_t rows, int64_t blocks, int R, int64_t first = 0, int64_t last = -1) {
  if (last < 0) last = (rows + R - 1) / R;
  const int64_t group_bytes = R * blocks * int64_t(sizeof(Layout));
  auto dst = static_cast<uint8_t *>(out);
  std::memset(dst + first * group_bytes, 0, size_t((last - first) * group_bytes));
  // move_groups reads `stored` only, in this direction.
  detail::move_groups<Layout>(const_cast<uint8_t *>(static_cast<const uint8_t *>(in)), dst, rows, blocks, R, first, last, true);
}
// The inverse for groups [first, last) (all of them by default): a grouped matrix's rows as
// stored, `out` rows * blocks * sizeof(Layout) bytes.
template <class Layout>
void ungroup_rows(const void *in, void *out, int64_t rows, int64_t blocks, int R, int64_t first = 0, int64_t last = -1) {
  if (last < 0) last = (rows + R - 1) / R;
  // move_groups reads `grouped` only, in this direction.
  detail::move_groups<Layout>(static_cast<uint8_t *>(out), const_cast<uint8_t *>(static_cast<const uint8_t *>(in)), rows, blocks, R, first, last, false);
}

}  // namespace kdsl::formats
