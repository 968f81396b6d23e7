// compile_warnings.cpp - what a compile tells its user beside the code: spilled registers (dots left on FMAs come from the layout plan)
#include <fmt/format.h>

#include "codegen/codegen.h"

namespace kdsl::codegen {

std::optional<std::string> spill_warning(const ResourceReport &r, const std::string &kernel, const std::string &target) {
  if (r.spill_store_bytes > 0 || r.spill_load_bytes > 0)
    return fmt::format("kernel '{}' on {}: ptxas spilled registers to local memory ({} bytes stored, {} bytes loaded, a {}-byte stack frame, {} registers "
                       "a thread); smaller blocks or fewer elements a thread keep them in registers",
                       kernel, target, r.spill_store_bytes, std::max(r.spill_load_bytes, 0), std::max(r.stack_frame_bytes, 0), r.registers);
  if (r.vector_spills > 0 || r.scalar_spills > 0)
    return fmt::format("kernel '{}' on {}: registers spilled to scratch ({} VGPRs and {} SGPRs, {} scratch bytes a work-item, {} VGPRs); smaller blocks or "
                       "fewer elements a thread keep them in registers",
                       kernel, target, std::max(r.vector_spills, 0), std::max(r.scalar_spills, 0), std::max(r.stack_frame_bytes, 0), r.registers);
  return std::nullopt;
}

}  // namespace kdsl::codegen
