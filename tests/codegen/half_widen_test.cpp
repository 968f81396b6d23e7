// half_widen_test.cpp - loading f16 and widening to f32 is exact for every one of the 65536 bit patterns (NaNs up to quieting)
#include <cmath>
#include <cstring>
#include <vector>

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
