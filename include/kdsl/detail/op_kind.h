// op_kind.h - the enum of block-IR operations, shared by the tracing front end and the IR
#pragma once
#include <cstdint>

namespace kdsl {

enum class OpKind : uint8_t {
#define OP(name, text, operands, traits) name,
#include <kdsl/detail/ops.def>
};

}  // namespace kdsl
