// tensor_descriptor_test.cpp - tile loads and stores through a TensorDescriptor on the CPU: tiles at any offset (outside the tensor: zeros read, nothing written) and the descriptor matmul against float64
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "examples/matmul_descriptor.h"
#include "examples/matmul_persistent.h"
#include "tests/test_util.h"

using namespace kdsl;

namespace {

// Copies the 8 x 16 tile at (row, col) of a rows x cols tensor whose rows are `stride` apart
// into out [8][16].
void copy_tile(Ptr<const i32> x, Ptr<i32> out, Scalar<i32> rows, Scalar<i32> cols, Scalar<i32> stride, Scalar<i32> row, Scalar<i32> col) {
  auto tile = make_tensor_descriptor(x, rows, cols, stride).template load<8, 16>(row, col);
  store(out + expand_dims<1>(arange<8>()) * 16 + expand_dims<0>(arange<16>()), tile);
}

// The same over bytes, for a tensor past 2^31 elements.
void copy_byte_tile(Ptr<const u8> x, Ptr<u8> out, Scalar<i32> rows, Scalar<i32> cols, Scalar<i32> stride, Scalar<i32> row, Scalar<i32> col) {
  auto tile = make_tensor_descriptor(x, rows, cols, stride).template load<8, 16>(row, col);
  store(out + expand_dims<1>(arange<8>()) * 16 + expand_dims<0>(arange<16>()), tile);
}

// Writes in [8][16] as the 8 x 16 tile at (row, col) of a rows x cols tensor whose rows are
// `stride` apart.
void store_tile(Ptr<const i32> in, Ptr<i32> x, Scalar<i32> rows, Scalar<i32> cols, Scalar<i32> stride, Scalar<i32> row, Scalar<i32> col) {
  auto tile = load(in + expand_dims<1>(arange<8>()) * 16 + expand_dims<0>(arange<16>()));
  make_tensor_descriptor(x, rows, cols, stride).store(row, col, tile);
}

// 3-D: the 8 x 16 tile at (plane, row, col) of a planes x rows x cols tensor (planes
// plane_stride apart, rows `stride` apart) into out [8][16]; and the same tile written from in.
void copy_tile_3d(Ptr<const i32> x, Ptr<i32> out, Scalar<i32> planes, Scalar<i32> rows, Scalar<i32> cols, Scalar<i32> plane_stride, Scalar<i32> stride,
                  Scalar<i32> plane, Scalar<i32> row, Scalar<i32> col) {
  auto tile = make_tensor_descriptor(x, planes, rows, cols, plane_stride, stride).template load<8, 16>(plane, row, col);
  store(out + expand_dims<1>(arange<8>()) * 16 + expand_dims<0>(arange<16>()), tile);
}
void store_tile_3d(Ptr<const i32> in, Ptr<i32> x, Scalar<i32> planes, Scalar<i32> rows, Scalar<i32> cols, Scalar<i32> plane_stride, Scalar<i32> stride,
                   Scalar<i32> plane, Scalar<i32> row, Scalar<i32> col) {
  auto tile = load(in + expand_dims<1>(arange<8>()) * 16 + expand_dims<0>(arange<16>()));
  make_tensor_descriptor(x, planes, rows, cols, plane_stride, stride).store(plane, row, col, tile);
}

// The largest difference of c = a @ b (f16, [M][K] by [K][N]) from its float64 product,
// relative to 1 + |reference|.
double worst_matmul_error(const std::vector<half> &a, const std::vector<half> &b, const std::vector<half> &c, int M, int N, int K) {
  double worst = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double ref = 0;
      for (int k = 0; k < K; ++k) ref += double(float(a[size_t(i) * K + k])) * double(float(b[size_t(k) * N + j]));
      worst = std::max(worst, std::fabs(double(float(c[size_t(i) * N + j])) - ref) / (1 + std::fabs(ref)));
    }
  return worst;
}

}  // namespace

TEST_CASE("tensor descriptor: a tile store writes the tensor's elements where the tile overlaps it and nothing else, at negative and past-the-end offsets") {
  const int rows = 13, cols = 21, stride = 24;
  const int32_t untouched = -1;
  std::vector<int32_t> tile(8 * 16);
  for (size_t i = 0; i < tile.size(); ++i) tile[i] = int32_t(i) + 1;
  Device dev = Device::cpu();
  Buffer<int32_t> din(dev, tile);
  auto kernel = compile<store_tile>(dev);
  for (auto [r0, c0] : {std::pair{0, 0}, {5, 5}, {-3, -7}, {10, 12}, {-8, 0}, {13, 21}, {7, -16}}) {
    CAPTURE(r0);
    CAPTURE(c0);
    std::vector<int32_t> x(size_t(rows) * stride + 16, untouched);  // and 16 past the end
    Buffer<int32_t> dx(dev, x);
    kernel(grid(1), din, dx, rows, cols, stride, r0, c0);
    dx.copy_to_host(x);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < stride; ++c) {
        const int i = r - r0, j = c - c0;
        const bool written = c < cols && i >= 0 && i < 8 && j >= 0 && j < 16;
        REQUIRE(x[size_t(r) * stride + size_t(c)] == (written ? tile[size_t(i) * 16 + size_t(j)] : untouched));
      }
    for (size_t e = size_t(rows) * stride; e < x.size(); ++e) REQUIRE(x[e] == untouched);
  }
}

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

// Planes 3 x rows 13 x cols 21, rows 24 apart and planes 13 * 24 + 8 apart (a gap between
// them): tiles in each plane, at ragged offsets, and in planes outside the tensor.
TEST_CASE("tensor descriptor: 3-D tiles read one plane's elements where they overlap it and 0 elsewhere; stores write only those") {
  const int planes = 3, rows = 13, cols = 21, stride = 24, plane_stride = rows * stride + 8;
  const size_t elements = size_t(planes) * plane_stride;
  std::vector<int32_t> x(elements);
  for (size_t i = 0; i < x.size(); ++i) x[i] = int32_t(i) + 1;
  std::vector<int32_t> tile(8 * 16);
  for (size_t i = 0; i < tile.size(); ++i) tile[i] = -int32_t(i) - 2;
  Device dev = Device::cpu();
  Buffer<int32_t> dx(dev, x), dout(dev, 8 * 16), din(dev, tile);
  auto load_kernel = compile<copy_tile_3d>(dev);
  auto store_kernel = compile<store_tile_3d>(dev);
  auto inside = [&](int p, int r, int c) { return p >= 0 && p < planes && r >= 0 && r < rows && c >= 0 && c < cols; };
  auto at = [&](int p, int r, int c) { return size_t(p) * plane_stride + size_t(r) * stride + size_t(c); };
  for (int p0 : {0, 1, 2, -1, 3})
    for (auto [r0, c0] : {std::pair{0, 0}, {5, 5}, {-3, -7}, {10, 12}}) {
      CAPTURE(p0);
      CAPTURE(r0);
      CAPTURE(c0);
      load_kernel(grid(1), dx, dout, planes, rows, cols, plane_stride, stride, p0, r0, c0);
      std::vector<int32_t> out(8 * 16);
      dout.copy_to_host(out);
      for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 16; ++j) REQUIRE(out[size_t(i) * 16 + size_t(j)] == (inside(p0, r0 + i, c0 + j) ? x[at(p0, r0 + i, c0 + j)] : 0));
      std::vector<int32_t> y(elements + 16, -1);
      Buffer<int32_t> dy(dev, y);
      store_kernel(grid(1), din, dy, planes, rows, cols, plane_stride, stride, p0, r0, c0);
      dy.copy_to_host(y);
      for (size_t e = 0; e < y.size(); ++e) {
        const int p = int(e / size_t(plane_stride)), r = int(e % size_t(plane_stride)) / stride, c = int(e % size_t(plane_stride)) % stride;
        const int i = r - r0, j = c - c0;
        const bool written = e < elements && p == p0 && inside(p, r, c) && i >= 0 && i < 8 && j >= 0 && j < 16;
        REQUIRE(y[e] == (written ? tile[size_t(i) * 16 + size_t(j)] : -1));
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
    CHECK(worst_matmul_error(a, b, c, M, N, K) < 2e-3);
  }
}

// The persistent form on fewer programs than tiles (1, 3, the grid persistent_grid picks) and
// with GROUP_M 2, so that groups are cut short by M: each tile computed once, wherever
// its program is, with the descriptor matmul's bound.
TEST_CASE("tensor descriptor: the persistent matmul on the CPU matches float64 on any number of programs, aligned and ragged") {
  KDSL_TEST_RNG(rng);
  std::normal_distribution<float> dist(0, 1);
  Device dev = Device::cpu();
  auto kernel = compile<examples::matmul_persistent<f16, f16, 16, 32, 16, 2>>(dev);
  for (auto [M, N, K] : {std::tuple{64, 64, 64}, {87, 45, 50}, {1, 33, 17}}) {
    std::vector<half> a(size_t(M) * K), b(size_t(K) * N);
    for (half &e : a) e = half(dist(rng));
    for (half &e : b) e = half(dist(rng));
    for (Grid g : {grid(1), grid(3), examples::persistent_grid(dev, M, N, 16, 32)}) {
      CAPTURE(M);
      CAPTURE(N);
      CAPTURE(K);
      CAPTURE(g.x);
      std::vector<half> c(size_t(M) * N, half(1e4f));
      Buffer<half> da(dev, a), db(dev, b), dc(dev, c);
      kernel(g, da, db, dc, M, N, K);
      dc.copy_to_host(c);
      CHECK(worst_matmul_error(a, b, c, M, N, K) < 2e-3);
    }
  }
}

// rows * row_stride past 2^31 elements: the tile's offsets (row * row_stride + col) are i64,
// so the last rows are read where they are, not 2^32 bytes away. Only the pages the test
// touches are ever backed (a 2 GiB zeroed mapping).
TEST_CASE("tensor descriptor: a tile past 2^31 elements into the tensor is read where it is") {
  const int64_t rows = (int64_t(1) << 15) + 40, stride = int64_t(1) << 16;
  const int cols = 1000;
  Device dev = Device::cpu();
  Buffer<uint8_t> dx(dev, size_t(rows * stride)), dout(dev, 8 * 16);
  const int64_t r0 = rows - 5, c0 = cols - 10;  // the tile hangs past both ends
  REQUIRE(r0 * stride > (int64_t(1) << 31));
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 10; ++j) dx.data()[size_t((r0 + i) * stride + c0 + j)] = uint8_t(1 + i * 10 + j);
  compile<copy_byte_tile>(dev)(grid(1), dx, dout, int32_t(rows), cols, int32_t(stride), int32_t(r0), int32_t(c0));
  std::vector<uint8_t> out(8 * 16);
  dout.copy_to_host(out);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 16; ++j) REQUIRE(out[size_t(i) * 16 + size_t(j)] == (i < 5 && j < 10 ? 1 + i * 10 + j : 0));
}
