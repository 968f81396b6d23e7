// env.h - environment knobs that change what kdsl compiles, read in one place
#pragma once

namespace kdsl {

// KDSL_CHECK=1 (or any value but "0" and empty): every kernel compiled for the host is built in
// checked mode (CompileOptions::checked). Read when a kernel is created, so a test may set it.
bool env_checked_mode();

}  // namespace kdsl
