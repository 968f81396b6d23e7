// tensor_descriptor_test.cpp - tile loads through a TensorDescriptor on the CPU: tiles at any offset (outside the tensor: zeros) and the descriptor matmul against float64
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "examples/matmul_descriptor.h"
#include "tests/test_util.h"

using namespace kdsl;

namespace {

// Copies the 8 x 16 tile at (row, col) of a rows x cols tensor whose rows are `stride` apart
// into out [8][16].
void copy_tile(Ptr<const i32> x, Ptr<i32> out, Scalar<i32> rows, Scalar<i32> cols, Scalar<i32> stride, Scalar<i32> row, Scalar<i32> col) {
  auto tile = make_tensor_descriptor(x, rows, cols, stride).template load<8, 16>(row, col);
  store(out + expand_dims<1>(arange<8>()) * 16 + expand_dims<0>(arange<16>()), tile);
}

}  // namespace

TEST_CASE("tensor descriptor: a tile reads the tensor's elements where it overlaps it and 0 elsewhere, at negative and past-the-end offsets") {
  const int rows = 13, cols = 21, stride = 24;
  std::vector<int32_t> x(size_t(rows) * stride);
  for (size_t i = 0; i < x.size(); ++i) x[i] = int32_t(i) + 1;  // the padding past cols is not part of the tensor
  Device dev = Device::cpu();
  Buffer<int32_t> dx(dev, x), dout(dev, 8 * 16);
  auto kernel = compile<copy_tile>(dev);
  for (auto [r0, c0] : {std::pair{0, 0}, {5, 5}, {-3, -7}, {10, 12}, {-8, 0}, {13, 21}, {7, -16}}) {
    CAPTURE(r0);
    CAPTURE(c0);
    kernel(grid(1), dx, dout, rows, cols, stride, r0, c0);
    std::vector<int32_t> out(8 * 16);
    dout.copy_to_host(out);
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 16; ++j) {
        const int r = r0 + i, c = c0 + j;
        const int32_t want = r >= 0 && r < rows && c >= 0 && c < cols ? x[size_t(r) * stride + size_t(c)] : 0;
        REQUIRE(out[size_t(i) * 16 + size_t(j)] == want);
      }
  }
}

// f16 inputs, f32 accumulation, f16 output: the bound is the output's rounding (2^-11
// relative) on sums of K products of values about 1.
TEST_CASE("tensor descriptor: the descriptor matmul on the CPU matches float64 at aligned and ragged sizes") {
  KDSL_TEST_RNG(rng);
  std::normal_distribution<float> dist(0, 1);
  Device dev = Device::cpu();
  auto kernel = compile<examples::matmul_descriptor<f16, f16, 32, 32, 16>>(dev);
  for (auto [M, N, K] : {std::tuple{64, 64, 64}, {37, 45, 50}, {1, 33, 17}}) {
    CAPTURE(M);
    CAPTURE(N);
    CAPTURE(K);
    std::vector<half> a(size_t(M) * K), b(size_t(K) * N), c(size_t(M) * N);
    for (half &e : a) e = half(dist(rng));
    for (half &e : b) e = half(dist(rng));
    Buffer<half> da(dev, a), db(dev, b), dc(dev, c.size());
    kernel(grid(cdiv(M, 32), cdiv(N, 32)), da, db, dc, M, N, K);
    dc.copy_to_host(c);
    double worst = 0;
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) {
        double ref = 0;
        for (int k = 0; k < K; ++k) ref += double(float(a[size_t(i) * K + k])) * double(float(b[size_t(k) * N + j]));
        worst = std::max(worst, std::fabs(double(float(c[size_t(i) * N + j])) - ref) / (1 + std::fabs(ref)));
      }
    CHECK(worst < 2e-3);
  }
}
