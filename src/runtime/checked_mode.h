// checked_mode.h - the run time's side of checked mode: extents into the argument slots, a violation as one message
#pragma once
#include <string>
#include <vector>

#include <kdsl/kernel.h>

#include "codegen/codegen.h"

namespace kdsl::detail {

// "Ptr<const f32>", "Scalar<i32>": a parameter as the kernel declares it.
std::string param_type_text(const TypeDesc &t);

// Fills slots [n, 3n) of checked code (codegen.h's layout): each pointer argument's check base
// and extent in bytes, or 0 and UINT64_MAX where the caller passed no extent.
void fill_check_slots(const std::vector<TypeDesc> &params, const ArgValue *args, uint64_t *slots);

// The one message for a recorded violation: kernel, access, argument, element, program, extent.
std::string violation_message(const std::string &kernel, const std::vector<TypeDesc> &params, const ArgValue *args, const codegen::BoundsViolation &v);

}  // namespace kdsl::detail
