// row_groups.h - weight rows interleaved in groups of R: each field of a block with its R rows' copies side by side, so that a kernel loads several rows' bytes as one vector
#pragma once
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <utility>

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
// How a row's whole block is written before its fields are moved: as it is, or with its
// quants' bits moved so that most values are one byte's low bits, where as stored each value
// is a nibble of one byte and one or two bits of another: SixBitBytes (Q6_K,
// q6_k_six_bit_bytes below), FiveBitBytes (Q5_K, Q5_0 and Q5_1: q5_k_five_bit_bytes,
// five_bit_bytes_32). The decode kernels are bound by their instructions on AVX2, and each
// such value costs one AND instead of 3-6 operations. The bytes stay where they were, so the
// fields and their grains do not change.
enum class BlockBits { AsStored, SixBitBytes, FiveBitBytes };
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
// five_bit_bytes_32 below), then the quants.
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

// Q5_0's and Q5_1's five-bit bytes (BlockBits::FiveBitBytes). As stored, element l (l < 16)
// is the low nibble of qs[l] and element 16 + l its high one, each with bit l or 16 + l of qh
// (a little-endian 32-bit word) above it. Rewritten, for l = 4i + b (piece i, byte lane b of
// the 4 bytes a grouped kernel reads a row at a time),
//   qs[l] = v(l) | (bits 0-2 of v(16 + l)) << 5
//   qh    = bits 3-4 of v(16 + l) at bits 2i, 2i + 1 of byte b
// so that the low elements are a byte's low 5 bits and a high one is its top 3 below two bits
// of qh in the same lane, at one place for every lane of a piece.
template <class Layout>
void five_bit_bytes_32(uint8_t *block) {
  uint8_t *qs = block + offsetof(Layout, qs), *qh = block + offsetof(Layout, qh);
  const uint32_t fifth = uint32_t(qh[0]) | uint32_t(qh[1]) << 8 | uint32_t(qh[2]) << 16 | uint32_t(qh[3]) << 24;
  uint8_t high[4] = {};
  for (int l = 0; l < 16; ++l) {
    const int low = (qs[l] & 15) | int(fifth >> l & 1) << 4, up = (qs[l] >> 4) | int(fifth >> (16 + l) & 1) << 4;
    qs[l] = uint8_t(low | (up & 7) << 5);
    high[l % 4] = uint8_t(high[l % 4] | (up >> 3) << (2 * (l / 4)));
  }
  std::memcpy(qh, high, 4);
}
// The inverse: qs and qh as ggml stores them again.
template <class Layout>
void five_bit_bytes_32_stored(uint8_t *block) {
  uint8_t *qs = block + offsetof(Layout, qs), *qh = block + offsetof(Layout, qh);
  uint32_t fifth = 0;
  for (int l = 0; l < 16; ++l) {
    const int low = qs[l] & 31, up = (qs[l] >> 5) | (qh[l % 4] >> (2 * (l / 4)) & 3) << 3;
    qs[l] = uint8_t((low & 15) | (up & 15) << 4);
    fifth |= uint32_t(low >> 4) << l | uint32_t(up >> 4) << (16 + l);
  }
  for (int k = 0; k < 4; ++k) qh[k] = uint8_t(fifth >> (8 * k));
}

// Q6_K's six-bit bytes (BlockBits::SixBitBytes). As stored, value 128h + 32qq + l (half h,
// quarter qq, l < 32) is the low (qq 0, 1) or high (qq 2, 3) nibble of ql[64h + 32(qq % 2) + l]
// with bits 2qq, 2qq + 1 of qh[32h + l] above it: the 4 values at (h, l) take 12 bits of
// three bytes. Rewritten, the same three bytes hold
//   ql[64h + l]      = v0 | (bits 0-1 of v3) << 6
//   ql[64h + 32 + l] = v1 | (bits 2-3 of v3) << 6
//   qh[32h + l]      = v2 | (bits 4-5 of v3) << 6
// so that v0, v1 and v2 are a byte's low 6 bits (one AND) and v3 its three top bit pairs.
// The scales and d are untouched.
inline void q6_k_six_bit_bytes(uint8_t *block) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      uint8_t &a = block[offsetof(BlockQ6_K, ql) + 64 * h + l], &b = block[offsetof(BlockQ6_K, ql) + 64 * h + 32 + l];
      uint8_t &c = block[offsetof(BlockQ6_K, qh) + 32 * h + l];
      const int v0 = (a & 15) | (c & 3) << 4, v1 = (b & 15) | (c >> 2 & 3) << 4;
      const int v2 = (a >> 4) | (c >> 4 & 3) << 4, v3 = (b >> 4) | (c >> 6) << 4;
      a = uint8_t(v0 | (v3 & 3) << 6), b = uint8_t(v1 | (v3 >> 2 & 3) << 6), c = uint8_t(v2 | (v3 >> 4) << 6);
    }
}
// The inverse: a block's ql and qh as ggml stores them again.
inline void q6_k_stored_bits(uint8_t *block) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      uint8_t &a = block[offsetof(BlockQ6_K, ql) + 64 * h + l], &b = block[offsetof(BlockQ6_K, ql) + 64 * h + 32 + l];
      uint8_t &c = block[offsetof(BlockQ6_K, qh) + 32 * h + l];
      const int v0 = a & 63, v1 = b & 63, v2 = c & 63, v3 = (a >> 6) | (b >> 6) << 2 | (c >> 6) << 4;
      a = uint8_t((v0 & 15) | (v2 & 15) << 4), b = uint8_t((v1 & 15) | (v3 & 15) << 4);
      c = uint8_t((v0 >> 4) | (v1 >> 4) << 2 | (v2 >> 4) << 4 | (v3 >> 4) << 6);
    }
}

// Q5_K's five-bit bytes (BlockBits::FiveBitBytes). As stored, sub-block j's value at l
// (l < 32) is the low (j even) or high (j odd) nibble of qs[32(j / 2) + l], with bit j of
// qh[l] above it. Rewritten, the same bytes hold, for c < 4,
//   qs[32c + l] = v(2c) | (bits 0-2 of v(2c + 1)) << 5
//   qh[l]       = bits 3-4 of v(2c + 1) at bits 2c, 2c + 1
// so that an even sub-block's value is a byte's low 5 bits, and an odd one's the top 3 bits of
// that byte below 2 bits of qh.
inline void q5_k_five_bit_bytes(uint8_t *block) {
  for (int l = 0; l < 32; ++l) {
    uint8_t &qh = block[offsetof(BlockQ5_K, qh) + l];
    uint8_t high = 0;
    for (int c = 0; c < 4; ++c) {
      uint8_t &qs = block[offsetof(BlockQ5_K, qs) + 32 * c + l];
      const int even = (qs & 15) | (qh >> (2 * c) & 1) << 4, odd = (qs >> 4) | (qh >> (2 * c + 1) & 1) << 4;
      qs = uint8_t(even | (odd & 7) << 5);
      high = uint8_t(high | (odd >> 3) << (2 * c));
    }
    qh = high;
  }
}
// The inverse: a block's qs and qh as ggml stores them again.
inline void q5_k_stored_bits(uint8_t *block) {
  for (int l = 0; l < 32; ++l) {
    uint8_t &qh = block[offsetof(BlockQ5_K, qh) + l];
    uint8_t fifth = 0;
    for (int c = 0; c < 4; ++c) {
      uint8_t &qs = block[offsetof(BlockQ5_K, qs) + 32 * c + l];
      const int even = qs & 31, odd = (qs >> 5) | (qh >> (2 * c) & 3) << 3;
      qs = uint8_t((even & 15) | (odd & 15) << 4);
      fifth = uint8_t(fifth | (even >> 4) << (2 * c) | (odd >> 4) << (2 * c + 1));
    }
    qh = fifth;
  }
}
// A row's block to its rewritten bits (to_rewritten) or back as stored, where its plan says so.
template <class Layout>
void rewrite_block_bits(uint8_t *block, BlockBits bits, bool to_rewritten) {
  if constexpr (std::is_same_v<Layout, BlockQ6_K>) {
    if (bits == BlockBits::SixBitBytes) return to_rewritten ? q6_k_six_bit_bytes(block) : q6_k_stored_bits(block);
  } else if constexpr (std::is_same_v<Layout, BlockQ5_K>) {
    if (bits == BlockBits::FiveBitBytes) return to_rewritten ? q5_k_five_bit_bytes(block) : q5_k_stored_bits(block);
  } else if constexpr (std::is_same_v<Layout, BlockQ5_0> || std::is_same_v<Layout, BlockQ5_1>) {
    if (bits == BlockBits::FiveBitBytes) return to_rewritten ? five_bit_bytes_32<Layout>(block) : five_bit_bytes_32_stored<Layout>(block);
  }
  if (bits != BlockBits::AsStored) throw std::logic_error("row_groups.h: a block rewrite of another format");
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
