// main.cpp - a kdsl kernel in a project of its own: out = alpha * x + y, checked against a scalar loop
#include <kdsl/kdsl.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

using namespace kdsl;

// One program per BLOCK elements; the last program's lanes past n are masked off, so n need
// not be a multiple of BLOCK. alpha is a run-time scalar: a new value does not recompile.
template <int BLOCK>
void scaled_add(Ptr<f32> x, Ptr<f32> y, Ptr<f32> out, Scalar<f32> alpha, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  auto mask = offs < n;
  store(out + offs, alpha * load(x + offs, mask) + load(y + offs, mask), mask);
}

int main() {
  constexpr int kBlock = 256;
  const int n = 100'003;  // ragged: 100'003 is not a multiple of kBlock
  const float alpha = 0.75f;
  std::vector<float> x(n), y(n), out(n);
  std::mt19937 rng(2026);
  std::uniform_real_distribution<float> dist(-10, 10);
  for (int i = 0; i < n; ++i) x[i] = dist(rng), y[i] = dist(rng);

  try {
    Device dev = Device::best();  // a CUDA GPU where one is present, else the CPU
    Buffer<float> dx(dev, x), dy(dev, y), dout(dev, n);
    auto kernel = compile<scaled_add<kBlock>>(dev);
    kernel(grid(cdiv(n, kBlock)), dx, dy, dout, alpha, n);
    dout.copy_to_host(out);

    // The kernel may fuse the multiply and add into one rounding: allow one part in 10^6 of the terms.
    int wrong = 0;
    for (int i = 0; i < n; ++i) {
      float expected = alpha * x[i] + y[i];
      if (std::fabs(out[i] - expected) > 1e-6f * (std::fabs(alpha * x[i]) + std::fabs(y[i]))) ++wrong;
    }
    std::printf("scaled_add on %s: n=%d, out[0]=%g (expected %g), out[n-1]=%g (expected %g): %s\n", dev.name().c_str(),
                n, out[0], alpha * x[0] + y[0], out[n - 1], alpha * x[n - 1] + y[n - 1],
                wrong ? "MISMATCH" : "matches the scalar loop");
    if (wrong) std::printf("%d of %d elements differ\n", wrong, n);
    return wrong ? 1 : 0;
  } catch (const kdsl::Error &e) {
    std::fprintf(stderr, "scaled_add: %s\n", e.what());
    return 1;
  }
}
