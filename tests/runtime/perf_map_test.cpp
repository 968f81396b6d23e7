// perf_map_test.cpp - KDSL_PERF_MAP: every JIT-linked kernel's functions listed in /tmp/perf-<pid>.map, where perf finds their names
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace perf_map_test {

// A kernel of its own per tag, so each compile links a new object (not one already loaded).
template <int Tag>
void probe(Ptr<f32> out) {
  store(out + arange<16>(), cast<f32>(arange<16>()) + float(Tag));
}

std::vector<std::string> map_lines() {
  std::ifstream in("/tmp/perf-" + std::to_string(getpid()) + ".map");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace perf_map_test

TEST_CASE("runtime: KDSL_PERF_MAP lists each linked kernel's functions by address, size and name; unset, nothing") {
  using perf_map_test::map_lines;
  HostArray<float> out(16);
  {
    ScopedEnv env("KDSL_PERF_MAP", "1");
    const size_t before = map_lines().size();
    compile<perf_map_test::probe<7001>>(cpu())(grid(1), out.data());
    CHECK(out[3] == 7004.0f);
    const std::vector<std::string> lines = map_lines();
    REQUIRE(lines.size() > before);
    for (size_t i = before; i < lines.size(); ++i) {
      INFO(lines[i]);
      std::istringstream fields(lines[i]);
      std::string address, size, name, extra;
      fields >> address >> size >> name;
      CHECK(std::stoull(address, nullptr, 16) != 0);
      CHECK(std::stoull(size, nullptr, 16) > 0);
      CHECK(name.rfind("kdsl_", 0) == 0);  // kernel symbols are kdsl_<hash>
      CHECK(!(fields >> extra));
    }
  }
  const size_t before = map_lines().size();
  compile<perf_map_test::probe<7002>>(cpu())(grid(1), out.data());
  CHECK(out[3] == 7005.0f);
  CHECK(map_lines().size() == before);
  std::remove(("/tmp/perf-" + std::to_string(getpid()) + ".map").c_str());
}
