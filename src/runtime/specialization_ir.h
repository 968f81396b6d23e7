// specialization_ir.h - the public ArgSpec classes as the IR's ArgClass, and back as the cache key's and log's text
#pragma once
#include <string>
#include <vector>

#include <kdsl/specialization.h>

#include "ir/ir.h"

namespace kdsl::detail {

std::vector<ir::ArgClass> to_arg_classes(const std::vector<ArgSpec> &specs);
// "16,_,1": the cache key's specialization field and the log's "[16,_,1]" (Specialization::str).
std::string specialization_text(const std::vector<ir::ArgClass> &classes);

}  // namespace kdsl::detail
