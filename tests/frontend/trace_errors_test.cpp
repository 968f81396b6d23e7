// trace_errors_test.cpp - an error raised while a kernel is traced names the kernel
#include <kdsl/kdsl.h>

#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace trace_errors_test {

void fourth_axis(Ptr<i32> out) { store(out, program_id(3)); }

void fifth_count(Ptr<i32> out) { store(out, num_programs(4)); }

void tf32_of_halves(Ptr<f16> a, Ptr<f32> out) {
  auto r = expand_dims<1>(arange<16>()) * 16 + expand_dims<0>(arange<16>());
  auto x = load(a + r);
  store(out + r, dot(x, x, DotPrecision::TF32));
}

}  // namespace trace_errors_test

TEST_CASE("frontend: an error while tracing names the kernel and the operation") {
  std::vector<int32_t> out(1);
  auto check = [&](auto kernel, const std::string &operation) {
    try {
      kernel(grid(1), out.data());
      FAIL("the launch should have thrown");
    } catch (const Error &e) {
      std::string what = e.what();
      INFO(what);
      CHECK(what.rfind("kernel '" + kernel.name() + "': ", 0) == 0);
      CHECK(what.find(operation) != std::string::npos);
      CHECK(what.find("axes 0, 1 and 2") != std::string::npos);
    }
  };
  check(compile<trace_errors_test::fourth_axis>(cpu()), "program_id(3)");
  check(compile<trace_errors_test::fifth_count>(cpu()), "num_programs(4)");
}

TEST_CASE("frontend: DotPrecision::TF32 on inputs other than f32 is an error naming the kernel and the inputs' type") {
  std::vector<half> a(256);
  std::vector<float> out(256);
  auto k = compile<trace_errors_test::tf32_of_halves>(cpu());
  std::string what = error_text([&] { k(grid(1), a.data(), out.data()); });
  CHECK(what.rfind("kernel '" + k.name() + "': ", 0) == 0);
  CHECK(what.find("dot: DotPrecision::TF32 is for f32 inputs; these are f16") != std::string::npos);
}
