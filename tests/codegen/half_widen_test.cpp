// half_widen_test.cpp - loading f16 and widening to f32 is exact for every one of the 65536 bit patterns (NaNs up to quieting)
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "codegen/codegen.h"
#include "tests/traced.h"

#include "tests/codegen/host_assembly.h"
#include "tests/test_util.h"

namespace {
using namespace kdsl;

template <int BLOCK>
void widen_f16(Ptr<f16> in, Ptr<f32> out, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  store(out + offs, cast<f32>(load(in + offs, offs < n, 0)), offs < n);
}

TEST_CASE("codegen: f16 loads widen to f32 exactly (normals, subnormals, zeros, infinities, NaN payloads)") {
  const int n = 65536;
  std::vector<half> in(n);
  for (int i = 0; i < n; ++i) in[size_t(i)] = half::from_bits(uint16_t(i));
  std::vector<float> out(n, 0.0f);
  auto k = compile<widen_f16<1024>>(kdsl_test::cpu());
  k(grid(n / 1024), in.data(), out.data(), n);
  int wrong = 0, first = -1;
  for (int i = 0; i < n; ++i) {
    uint32_t got, want;
    float ref = f16_bits_to_f32(uint16_t(i));
    std::memcpy(&got, &out[size_t(i)], 4);
    std::memcpy(&want, &ref, 4);
    // A signaling NaN may come back quieted (its quiet bit set, sign and payload kept): that is
    // what IEEE 754 asks of a format conversion, and what F16C's vcvtph2ps does.
    if (std::isnan(ref)) got |= 0x00400000u, want |= 0x00400000u;
    if (got != want && (first = first < 0 ? i : first) >= 0) ++wrong;
  }
  INFO("first wrong f16 bit pattern: ", first);
  CHECK(wrong == 0);
}

}  // namespace

namespace {
using namespace kdsl;


TEST_CASE("codegen: where the CPU has F16C, f16 widens with vcvtph2ps at the full vector width") {
  const std::string features = "," + codegen::host_target().features + ",";
  if (features.find(",+f16c,") == std::string::npos) {
    MESSAGE("skipped: this CPU has no F16C (the integer widening runs instead)");
    return;
  }
  std::string s = kdsl_test::host_assembly(kdsl_test::traced<widen_f16<1024>>(), "widen_probe");
  const bool avx512 = features.find(",+avx512f,") != std::string::npos;
  INFO(s.substr(0, 4000));
  // LLVM's own choice would be 4 wide (xmm); the loop hint asks for 16 (zmm) or 8 (ymm).
  CHECK(kdsl_test::contains(s, "vcvtph2ps"));
  CHECK(kdsl_test::contains(s, avx512 ? "%zmm" : "%ymm"));
}

}  // namespace
