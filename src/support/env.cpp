// env.cpp - environment knobs that change what kdsl compiles
#include "support/env.h"

#include <cstdlib>
#include <string_view>

namespace kdsl {

bool env_checked_mode() {
  const char *v = std::getenv("KDSL_CHECK");
  return v && *v && std::string_view(v) != "0";
}

}  // namespace kdsl
