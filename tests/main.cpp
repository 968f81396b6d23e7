// main.cpp - the doctest runner for every kdsl suite
// No signal handlers: doctest's allocates while handling SIGABRT, so an abort from inside malloc
// (heap corruption) deadlocked the suite instead of failing it. A crash now ends the run at once,
// with glibc's or the kernel's message, and ctest reports the suite as failed.
#define DOCTEST_CONFIG_NO_POSIX_SIGNALS
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>

int main(int argc, char **argv) {
  // The suites check kernels and the engine with their hand-set block sizes, and count compiles
  // exactly; the autotuning tests turn tuning on where they test it. KDSL_AUTOTUNE=1 in the
  // environment runs every suite tuned instead. Set here, so the tools the tests run inherit it.
  ::setenv("KDSL_AUTOTUNE", "0", /*overwrite=*/0);
  return doctest::Context(argc, argv).run();
}
