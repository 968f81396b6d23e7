// cuda_toolchain.h - the CUDA toolkit pieces that shape compiled code (ptxas, libdevice), named for cache keys
#pragma once
#include <string>

namespace kdsl::cuda {

// "ptxas 13.0.88; libdevice <16 hex digits of its hash>" for the ptxas and libdevice.10.bc that
// codegen::compile uses for NVPTX now ($KDSL_PTXAS, $KDSL_LIBDEVICE, $CUDA_HOME, ...), "ptxas none" or
// "libdevice none" where absent. It goes into every CUDA cache key, so that a new toolkit
// compiles afresh instead of loading what the old one made. Remembered per file (path, size,
// modification time): one ptxas --version per process and toolkit.
std::string toolchain_features();

// "13.0.88" from ptxas --version's "Cuda compilation tools, release 13.0, V13.0.88"; the last
// line of its output where that line is missing; "unknown" where ptxas does not run.
std::string ptxas_version(const std::string &ptxas);

}  // namespace kdsl::cuda
