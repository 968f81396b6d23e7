// trace_errors_test.cpp - an error raised while a kernel is traced names the kernel
#include <kdsl/kdsl.h>

#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace trace_errors_test {

void fourth_axis(Ptr<i32> out) { store(out, program_id(3)); }

void fifth_count(Ptr<i32> out) { store(out, num_programs(4)); }

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
