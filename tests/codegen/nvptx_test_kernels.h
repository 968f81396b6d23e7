// nvptx_test_kernels.h - kernels that reach the corners of the GPU lowering the examples do not
#pragma once
#include <kdsl/kdsl.h>

#include "src/tools/example_kernels.h"

namespace nvptx_test {
using namespace kdsl;

template <int M, int N>
void row_and_column_sums(Ptr<f32> x, Ptr<f32> rows, Ptr<f32> cols) {
  auto r = expand_dims<1>(arange<M>());
  auto c = expand_dims<0>(arange<N>());
  auto v = load(x + r * N + c);
  store(rows + arange<M>(), sum<1>(v));
  store(cols + arange<N>(), sum<0>(v));
  store(x + r * N + c, v - expand_dims<0>(max<0>(v)));  // a reduction's result broadcast back
}

template <int M, int N>
void transpose(Ptr<f16> x, Ptr<f16> y) {
  auto r = expand_dims<1>(arange<M>());
  auto c = expand_dims<0>(arange<N>());
  auto v = load(x + r * N + c);
  auto rt = expand_dims<1>(arange<N>());
  auto ct = expand_dims<0>(arange<M>());
  store(y + rt * M + ct, trans(v));
}

template <int N>
void reshape_and_argmax(Ptr<f32> x, Ptr<i32> out) {
  auto v = reshape<N / 8, 8>(load(x + arange<N>()));
  store(out + arange<N / 8>(), argmax<1>(v));
  store(out + N, argmin(load(x + arange<N>())));
}

template <int BLOCK>
void loops_and_atomics(Ptr<f32> x, Ptr<f32> total, Ptr<i32> counts, Scalar<i32> n) {
  auto acc = for_range(0, n, BLOCK, zeros<f32, BLOCK>(), [&](auto i, auto acc) {
    auto offs = i + arange<BLOCK>();
    return acc + load(x + offs, offs < n, 0);
  });
  auto s = sum(acc);
  auto big = if_(s > 0.0f, [&] { return s; }, [&] { return -s; });
  atomic_add(total, big);
  atomic_add(counts + arange<BLOCK>() % 4, full<i32, BLOCK>(1));
}

template <int BM, int BN, int BK>
void int8_dot(Ptr<i8> a, Ptr<i8> b, Ptr<i32> c) {
  auto rm = expand_dims<1>(arange<BM>());
  auto rn = expand_dims<0>(arange<BN>());
  auto rk = arange<BK>();
  auto ta = load(a + rm * BK + expand_dims<0>(rk));
  auto tb = load(b + expand_dims<1>(rk) * BN + rn);
  store(c + rm * BN + rn, dot(ta, tb));
}

template <int BLOCK>
void bf16_math(Ptr<bf16> x, Ptr<bf16> y, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  auto m = offs < n;
  auto v = load(x + offs, m, 1.0);
  store(y + offs, tanh(v) + log(v) * sigmoid(v) + exp2(v), m);
}

inline std::vector<tools::NamedKernel> all_kernels() {
  std::vector<tools::NamedKernel> k = tools::example_kernels();
  k.push_back(tools::named_kernel<row_and_column_sums<32, 64>>("row_and_column_sums"));
  k.push_back(tools::named_kernel<transpose<64, 32>>("transpose"));
  k.push_back(tools::named_kernel<reshape_and_argmax<256>>("reshape_and_argmax"));
  k.push_back(tools::named_kernel<loops_and_atomics<256>>("loops_and_atomics", 8));
  k.push_back(tools::named_kernel<int8_dot<32, 32, 64>>("int8_dot"));
  k.push_back(tools::named_kernel<bf16_math<64>>("bf16_math", 4));  // smaller than the CTA: duplicated elements
  return k;
}

inline const tools::NamedKernel &find(const std::string &name) {
  static const std::vector<tools::NamedKernel> kernels = all_kernels();
  for (const auto &k : kernels)
    if (k.name == name) return k;
  throw std::runtime_error("no test kernel " + name);
}

}  // namespace nvptx_test
