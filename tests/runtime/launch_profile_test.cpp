// launch_profile_test.cpp - KDSL_PROFILE's table: one row per kernel with its launch count, nothing while it is off
#include "runtime/launch_profile.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <kdsl/kdsl.h>

using namespace kdsl;

namespace {

template <int BLOCK>
void profiled_scale(Ptr<f32> x, Ptr<f32> out, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  auto mask = offs < n;
  store(out + offs, load(x + offs, mask) * 2.0f, mask);
}

int count_occurrences(const std::string &text, const std::string &what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("launch profile: counts each kernel's host launches while on, nothing while off") {
  Kernel<profiled_scale<64>> scale(Device::cpu(), {});
  std::vector<float> x(100, 1.5f), out(100);
  const bool was_on = detail::launch_profile_enabled();
  detail::take_launch_profile();  // start from an empty table

  detail::set_launch_profile_enabled(true);
  for (int i = 0; i < 3; ++i) scale(grid(2), x.data(), out.data(), 100);
  std::string table = detail::take_launch_profile();
  CHECK(out[99] == 3.0f);
  INFO(table);
  CHECK(table.find("launches") != std::string::npos);
  CHECK(count_occurrences(table, "profiled_scale<64>") == 1);  // one row per kernel
  // The row starts with its launch count: 3.
  size_t row = table.rfind('\n', table.find("profiled_scale<64>"));
  REQUIRE(row != std::string::npos);
  CHECK(std::stoi(table.substr(row + 1)) == 3);
  CHECK(detail::take_launch_profile().empty());  // taking forgets

  detail::set_launch_profile_enabled(false);
  scale(grid(2), x.data(), out.data(), 100);
  CHECK(detail::take_launch_profile().empty());
  detail::set_launch_profile_enabled(was_on);
}

TEST_CASE("launch profile: rows come largest total first, with each one's share") {
  detail::take_launch_profile();
  detail::record_launch("kernel_small", 10.0);
  detail::record_launch("kernel_large", 300.0);
  detail::record_launch("kernel_small", 30.0);
  std::string table = detail::take_launch_profile();
  INFO(table);
  REQUIRE(table.find("kernel_large") != std::string::npos);
  CHECK(table.find("kernel_large") < table.find("kernel_small"));
  CHECK(table.find("88.2%") != std::string::npos);  // 300 of 340 us
  CHECK(table.find("11.8%") != std::string::npos);
  CHECK(table.find("20.00") != std::string::npos);  // kernel_small's mean: 40 us over 2 launches
}
