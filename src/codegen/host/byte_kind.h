// byte_kind.h - what the host lowering knows of a byte operand's values: signedness and proved bounds, which decide its integer-dot instructions
#pragma once

namespace kdsl::codegen {

// What the lowering knows of a byte operand of dot4 or dot: its type's signedness, and the bounds
// proved for their values (ir::ValueRanges: nibbles and 6-bit quants lie in 0..63, a grid's
// levels within its constants; the type's whole range where nothing is proved).
struct ByteKind {
  bool is_signed = true;
  int lo = -128, hi = 127;
  static ByteKind of_type(bool is_signed) { return is_signed ? ByteKind{true, -128, 127} : ByteKind{false, 0, 255}; }
  bool reads_as_u8() const { return lo >= 0; }  // the bytes as u8 are the values
  bool reads_as_s8() const { return hi <= 127; }
  bool below_128() const { return lo >= 0 && hi <= 127; }
  bool within_127() const { return lo >= -127 && hi <= 127; }  // negating any byte stays in s8
};

}  // namespace kdsl::codegen
