// dynamic_library_test.cpp - the one loader of run-time libraries: errors name the library and the symbol; a failed load is remembered
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include <kdsl/error.h>

#include "runtime/dynamic_library.h"

using namespace kdsl;

namespace dynamic_library_test {

constexpr detail::LibraryDescription kMath{"the C math library", "no C math library found", "nothing works without it", "a libm from before C99"};

}  // namespace dynamic_library_test

using namespace dynamic_library_test;

TEST_CASE("runtime: DynamicLibrary binds entry points from a library and names the library and symbol it lacks") {
  detail::DynamicLibrary libm("libm.so.6", kMath);
  CHECK(libm.path() == "libm.so.6");
  double (*cosine)(double) = nullptr;
  libm.bind(cosine, "cos");
  REQUIRE(bool(cosine));
  CHECK(cosine(0.0) == 1.0);

  void (*missing)() = nullptr;
  CHECK_THROWS_WITH_AS(libm.bind(missing, "kdsl_no_such_entry_point"),
                       "the C math library libm.so.6 lacks kdsl_no_such_entry_point (a libm from before C99)", Error);
  missing = reinterpret_cast<void (*)()>(&std::abort);
  libm.bind_optional(missing, "kdsl_no_such_entry_point");
  CHECK(!bool(missing));  // optional: left null where the library lacks it
}

TEST_CASE("runtime: DynamicLibrary names the path and the loader's reason when the library does not open") {
  CHECK_THROWS_WITH_AS(detail::DynamicLibrary("/nonexistent/libkdsl_missing.so", kMath),
                       doctest::Contains("no C math library found (/nonexistent/libkdsl_missing.so: "), Error);
  CHECK_THROWS_WITH_AS(detail::DynamicLibrary("/nonexistent/libkdsl_missing.so", kMath), doctest::Contains("); nothing works without it"), Error);
}

TEST_CASE("runtime: LoadedOnce loads once, and remembers a failure instead of retrying") {
  int loads = 0;
  detail::LoadedOnce<int> good([&] { return ++loads * 7; });
  CHECK(good.get() == 7);
  CHECK(good.get() == 7);
  CHECK(good.failure().empty());
  CHECK(loads == 1);

  int attempts = 0;
  detail::LoadedOnce<int> bad([&]() -> int {
    ++attempts;
    throw Error("libexample.so: not here");
  });
  CHECK_THROWS_WITH_AS(bad.get(), "libexample.so: not here", Error);
  CHECK_THROWS_WITH_AS(bad.get(), "libexample.so: not here", Error);
  CHECK(bad.failure() == "libexample.so: not here");
  CHECK(attempts == 1);
}
