// gpu_test.h - opening the GPU for tests/gpu: a skip that says "skipped:" and why (run.sh reads it), and the fake driver told apart
#pragma once
#include <doctest/doctest.h>

#include <optional>
#include <string>

#include <kdsl/kdsl.h>

namespace kdsl_test {

// GPU 0, or nullopt after a "skipped: no CUDA device: <why>" message (no driver, no GPU).
inline std::optional<kdsl::Device> open_gpu() {
  try {
    return kdsl::Device::cuda(0);
  } catch (const kdsl::Error &e) {
    MESSAGE("skipped: no CUDA device: ", std::string(e.what()));
    return std::nullopt;
  }
}

// tests/runtime/fake_libcuda.c (KDSL_LIBCUDA pointing at it) names its GPU "Fake GPU" and runs
// nothing: launches are recorded, outputs stay as they were. Tests compile and launch on it, and
// skip the comparisons, saying so.
inline bool is_fake(const kdsl::Device &gpu) { return gpu.name().find("(Fake GPU,") != std::string::npos; }

inline bool skip_comparison_on_fake(const kdsl::Device &gpu) {
  if (!is_fake(gpu)) return false;
  MESSAGE("skipped: the fake libcuda executes no kernels; compiled and launched only, outputs not compared");
  return true;
}

}  // namespace kdsl_test
