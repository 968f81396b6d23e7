// cuda_driver_test.cpp - the CUDA runtime's error paths on a machine without an NVIDIA driver
#include <doctest/doctest.h>

#include <filesystem>

#include <kdsl/error.h>

#include "runtime/cuda/cuda_device.h"
#include "runtime/cuda/cuda_driver.h"

using namespace kdsl;

TEST_CASE("cuda: a missing driver is a user error naming libcuda.so.1") {
  if (cuda::driver_load_error().empty() || cuda::driver_library() != "libcuda.so.1") {
    MESSAGE("a driver loads here (", cuda::driver_library(), "): the missing-driver path is checked with a bogus library name only");
  } else {
    CHECK_THROWS_WITH_AS(cuda::driver(), doctest::Contains("no NVIDIA driver found (libcuda.so.1: "), Error);
    CHECK_THROWS_WITH_AS(detail::CudaDevice(0), doctest::Contains("libcuda.so.1"), Error);
    CHECK_THROWS_WITH_AS(cuda::driver(), doctest::Contains("no NVIDIA driver found"), Error);  // remembered, not retried
  }
  CHECK_THROWS_WITH_AS(cuda::load_driver("/nonexistent/libcuda.so.1"), doctest::Contains("no NVIDIA driver found (/nonexistent/libcuda.so.1: "), Error);
}

TEST_CASE("cuda: driver errors are reported by name with the call that failed") {
  CHECK(cuda::error_name(218) == "CUDA_ERROR_INVALID_PTX");
  CHECK(cuda::error_name(100) == "CUDA_ERROR_NO_DEVICE");
  CHECK(cuda::error_name(12345) == "CUDA_ERROR_12345");
  cuda::Driver none;
  none.library = "test";
  CHECK_THROWS_WITH_AS(none.check(2, "cuMemAlloc"), doctest::Contains("CUDA driver call cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (2)"), Error);
  // The toolkit's stub driver loads but cannot initialize: cuInit's error comes back by name.
  for (const char *stub : {"/usr/local/cuda/lib64/stubs/libcuda.so", "/usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so"}) {
    if (!std::filesystem::exists(stub)) continue;
    CHECK_THROWS_WITH_AS(cuda::load_driver(stub), doctest::Contains("CUDA driver call cuInit failed: CUDA_ERROR_"), Error);
    break;
  }
}
