// pipeline.cpp - the compiler's table of contents: every block-IR pass, in order
#include "codegen/pipeline.h"

#include <chrono>
#include <cstdlib>

#include "codegen/passes/cse.h"
#include "codegen/passes/dce.h"
#include "codegen/passes/fold_constants.h"
#include "codegen/passes/specialize_arguments.h"
#include "ir/verifier.h"
#include "support/log.h"

namespace kdsl::codegen {

struct Pass {
  const char *name;
  void (*run)(ir::Function &);
};

// Each pass on its own line. Backend lowering (host: lower_host.cpp) follows.
constexpr Pass kPipeline[] = {
    {"specialize_arguments", passes::specialize_arguments},
    {"fold_constants", passes::fold_constants},
    {"cse", passes::cse},
    {"dce", passes::dce},
};

void run_pipeline(ir::Function &fn) {
  static const bool time_passes = std::getenv("KDSL_TIME_PASSES") != nullptr;
  for (const Pass &pass : kPipeline) {
    auto start = std::chrono::steady_clock::now();
    pass.run(fn);
    ir::verify_or_throw(fn);
    if (time_passes) log_write(LogLevel::Info, fmt::format("{}: pass {} took {:.3f} ms", fn.name, pass.name, elapsed_ms(start)));
  }
}

}  // namespace kdsl::codegen
