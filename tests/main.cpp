// main.cpp - the doctest runner for every kdsl suite
// No signal handlers: doctest's allocates while handling SIGABRT, so an abort from inside malloc
// (heap corruption) deadlocked the suite instead of failing it. A crash now ends the run at once,
// with glibc's or the kernel's message, and ctest reports the suite as failed.
#define DOCTEST_CONFIG_NO_POSIX_SIGNALS
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
