// launch_graph_test.cpp - kdsl::LaunchGraph on the CPU: a capture records without running, replays run the launches in order over the memory as it is then
#include <doctest/doctest.h>

#include <stdexcept>
#include <vector>

#include <kdsl/kdsl.h>

#include "tests/test_util.h"

namespace launch_graph_test {
using namespace kdsl;

constexpr int kBlock = 64;

// x[i] += step[0] for i < n: the increment is read from memory when the launch runs.
void add_from_memory(Ptr<f32> x, Ptr<const f32> step, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto mask = offs < n;
  store(x + offs, load(x + offs, mask) + load(step), mask);
}

// x[i] *= a for i < n: the factor is the launch's scalar argument, fixed when recorded.
void scale(Ptr<f32> x, Scalar<f32> a, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto mask = offs < n;
  store(x + offs, load(x + offs, mask) * a, mask);
}

std::vector<float> filled(size_t n, float v) { return std::vector<float>(n, v); }

}  // namespace launch_graph_test

using namespace launch_graph_test;

TEST_CASE("LaunchGraph on the CPU: a capture runs nothing; each replay runs its launches in order, over the memory as it is then") {
  const Device cpu = Device::cpu(2);
  const int n = 100;  // ragged: the second program of each launch is masked
  Buffer<float> x(cpu, filled(n, 1.0f)), step(cpu, filled(1, 1.0f));
  auto add = compile<add_from_memory>(cpu);
  auto mul = compile<scale>(cpu);
  const int64_t launches = cache_stats().launches;
  float factor = 2.0f;
  LaunchGraph graph = LaunchGraph::capture(cpu, [&] {
    add(grid(cdiv(n, kBlock)), x, step, n);  // compiled inside the capture: the CPU can
    mul(grid(cdiv(n, kBlock)), x, factor, n);
  });
  factor = 5.0f;  // the recorded launch keeps the value it was given
  CHECK(bool(graph));
  CHECK(graph.launches() == 2);
  CHECK(x.to_vector() == filled(n, 1.0f));  // nothing ran
  CHECK(cache_stats().launches == launches);
  graph.replay();
  CHECK(x.to_vector() == filled(n, 4.0f));  // (1 + 1) * 2: in order
  step[0] = 3.0f;
  graph.replay();
  CHECK(x.to_vector() == filled(n, 14.0f));  // (4 + 3) * 2: the step read at replay
  CHECK(cache_stats().launches == launches + 4);
  // After the capture, launches run at once again.
  add(grid(cdiv(n, kBlock)), x, step, n);
  CHECK(x.to_vector() == filled(n, 17.0f));
}

TEST_CASE("LaunchGraph: captures do not nest, a capture that throws ends with nothing recorded, an empty graph cannot replay") {
  const Device cpu = Device::cpu(1);
  const int n = 10;
  Buffer<float> x(cpu, filled(n, 1.0f)), step(cpu, filled(1, 1.0f));
  auto add = compile<add_from_memory>(cpu);

  std::string text = kdsl_test::error_text([&] { LaunchGraph::capture(cpu, [&] { LaunchGraph::capture(cpu, [] {}); }); });
  CHECK(kdsl_test::contains(text, "is already capturing; captures do not nest"));
  CHECK_THROWS_AS(LaunchGraph::capture(cpu, [&] {
                    add(grid(1), x, step, n);
                    throw std::runtime_error("stop");
                  }),
                  std::runtime_error);
  // A launch the capture refuses (a wrong argument) throws from the capture as it would outside.
  text = kdsl_test::error_text([&] { LaunchGraph::capture(cpu, [&] { add(grid(0), x, step, n); }); });
  CHECK(kdsl_test::contains(text, "has no programs"));
  // Neither capture is under way any more: a launch runs.
  add(grid(1), x, step, n);
  CHECK(x.to_vector() == filled(n, 2.0f));

  LaunchGraph none;
  CHECK_FALSE(bool(none));
  CHECK(none.launches() == 0);
  text = kdsl_test::error_text([&] { none.replay(); });
  CHECK(kdsl_test::contains(text, "holds no capture"));
  LaunchGraph empty = LaunchGraph::capture(cpu, [] {});
  CHECK(empty.launches() == 0);
  empty.replay();
}
