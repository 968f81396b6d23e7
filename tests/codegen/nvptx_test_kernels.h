// nvptx_test_kernels.h - kernels that reach the corners of the GPU lowering the examples do not
#pragma once
#include <type_traits>

#include <kdsl/kdsl.h>

#include "src/tools/example_kernels.h"

namespace nvptx_test {
using namespace kdsl;

// f8e4m3 through the GPU lowering's loads, stores and casts: x rounded to E4M3 (stored, and
// widened back in registers), and codes decoded.
template <int B>
void f8e4m3_convert(Ptr<f32> x, Ptr<f8e4m3> rounded, Ptr<f32> widened, Ptr<f8e4m3> codes, Ptr<f32> decoded, Scalar<i32> n) {
  auto offs = program_id(0) * B + arange<B>();
  auto m = offs < n;
  auto q = cast<f8e4m3>(load(x + offs, m));
  store(rounded + offs, q, m);
  store(widened + offs, cast<f32>(q), m);
  store(decoded + offs, cast<f32>(load(codes + offs, m)), m);
}

// f8e4m3 bytes copied through a masked load (a phi or select of the loaded byte and the zero):
// stored again as the bytes themselves, with no conversion either way.
template <int B>
void f8e4m3_copy(Ptr<const f8e4m3> x, Ptr<f8e4m3> y, Scalar<i32> n) {
  auto offs = program_id(0) * B + arange<B>();
  auto m = offs < n;
  store(y + offs, load(x + offs, m), m);
}

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
  store(out + N / 8, argmin(load(x + arange<N>())));  // out holds N / 8 + 1 ids
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

template <class T, int BM, int BN, int BK>
void int8_dot(Ptr<T> a, Ptr<T> b, Ptr<i32> c) {
  auto rm = expand_dims<1>(arange<BM>());
  auto rn = expand_dims<0>(arange<BN>());
  auto rk = arange<BK>();
  auto ta = load(a + rm * BK + expand_dims<0>(rk));
  auto tb = load(b + expand_dims<1>(rk) * BN + rn);
  store(c + rm * BN + rn, dot(ta, tb));
}

// dot4 as the integer-dot decode kernels use it: BN weight rows of u8 quants against one row
// of i8 activations, a sum of 4 products per 4 bytes (dp4a, v_dot4), summed per row.
template <int BN, int L>
void dot4_rows(Ptr<u8> w, Ptr<i8> x, Ptr<i32> out) {
  auto rows = load(w + expand_dims<1>(arange<BN>()) * L + expand_dims<0>(arange<L>()));
  auto sums = dot4(rows, load(x + expand_dims<0>(arange<L>())));
  store(out + arange<BN>(), sum<1>(sums));
}

// examples/matmul.h over any operand and accumulator type: f16, bf16 and i8 run on tensor
// cores where the tiles are whole instruction tiles (mma.sync m16n8k16, m16n8k32), f32 when
// P is DotPrecision::TF32. C is stored as Out (an f16 C: the accumulator converted to a
// blocked layout for the narrow store).
template <class T, class Acc, int BM, int BN, int BK, class Out = Acc, DotPrecision P = DotPrecision::IEEE>
void tiled_matmul(Ptr<T> a, Ptr<T> b, Ptr<Out> c, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K) {
  auto row = expand_dims<1>(program_id(0) * BM + arange<BM>());
  auto col = expand_dims<0>(program_id(1) * BN + arange<BN>());
  auto rk = arange<BK>();
  auto acc = for_range(0, K, BK, zeros<Acc, BM, BN>(), [&](auto k, auto acc) {
    auto ka = expand_dims<0>(k + rk);
    auto kb = expand_dims<1>(k + rk);
    auto ta = load(a + row * K + ka, row < M && ka < K, 0);
    auto tb = load(b + kb * N + col, kb < K && col < N, 0);
    return dot(ta, tb, acc, P);
  });
  if constexpr (std::is_same_v<Out, Acc>) store(c + row * N + col, acc, row < M && col < N);
  else store(c + row * N + col, cast<Out>(acc), row < M && col < N);
}

// C = A W^T with W stored [N, K] (a weight matrix by output row): B is trans(x) of a loaded
// [BN, BK] tile, copied as stored ([n][k]).
template <class T, int BM, int BN, int BK>
void tiled_matmul_nt(Ptr<T> a, Ptr<T> w, Ptr<f32> c, Scalar<i32> M, Scalar<i32> N, Scalar<i32> K) {
  auto row = expand_dims<1>(program_id(0) * BM + arange<BM>());
  auto col = expand_dims<0>(program_id(1) * BN + arange<BN>());
  auto wrow = expand_dims<1>(program_id(1) * BN + arange<BN>());
  auto rk = arange<BK>();
  auto acc = for_range(0, K, BK, zeros<f32, BM, BN>(), [&](auto k, auto acc) {
    auto ka = expand_dims<0>(k + rk);
    auto ta = load(a + row * K + ka, row < M && ka < K, 0);
    auto tw = load(w + wrow * K + ka, wrow < N && ka < K, 0);
    return dot(ta, trans(tw), acc);
  });
  store(c + row * N + col, acc, row < M && col < N);
}

// An epilogue on the accumulator: scaled, clamped at zero and stored as f16 (a narrow store:
// the accumulator is converted to a blocked layout through shared memory), plus its row sums
// (a reduction in the accumulator's layout).
template <int BM, int BN, int BK>
void matmul_relu_f16(Ptr<f16> a, Ptr<f16> b, Ptr<f16> c, Ptr<f32> row_sums, Scalar<i32> K) {
  auto row = expand_dims<1>(arange<BM>());
  auto col = expand_dims<0>(arange<BN>());
  auto rk = arange<BK>();
  auto acc = for_range(0, K, BK, zeros<f32, BM, BN>(), [&](auto k, auto acc) {
    auto ta = load(a + row * K + expand_dims<0>(k + rk));
    auto tb = load(b + expand_dims<1>(k + rk) * BN + col);
    return dot(ta, tb, acc);
  });
  auto y = maximum(acc * 0.5f, 0.0f);
  store(c + row * BN + col, cast<f16>(y));
  store(row_sums + arange<BM>(), sum<1>(y));
}

// One tile of attention: s = q k^T, softmax along rows, o = p v; the second dot's A operand
// is the first one's result (the accumulator layout staged for ldmatrix), and the row max
// and sum reduce in the accumulator layout.
template <int BM, int BN, int D>
void attention_tile(Ptr<f16> q, Ptr<f16> k, Ptr<f16> v, Ptr<f32> o) {
  auto rm = expand_dims<1>(arange<BM>());
  auto rn = expand_dims<1>(arange<BN>());
  auto d = expand_dims<0>(arange<D>());
  auto s = dot(load(q + rm * D + d), trans(load(k + rn * D + d)));  // [BM, BN]
  auto p = exp(s - expand_dims<1>(max<1>(s)));
  auto out = dot(cast<f16>(p), load(v + rn * D + d));  // [BM, D]
  store(o + rm * D + d, out / expand_dims<1>(sum<1>(p)));
}

template <int BLOCK>
void bf16_math(Ptr<bf16> x, Ptr<bf16> y, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  auto m = offs < n;
  auto v = load(x + offs, m, 1.0);
  store(y + offs, tanh(v) + log(v) * sigmoid(v) + exp2(v), m);
}

// erf, floor, ceil and pow (block-block and block-literal): libdevice and cvt.rmi / cvt.rpi.
template <int BLOCK>
void math_ops(Ptr<f32> x, Ptr<f32> y, Ptr<f32> out, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  auto m = offs < n;
  auto a = load(x + offs, m, 1.0);
  auto b = load(y + offs, m, 1.0);
  store(out + offs, erf(a), m);
  store(out + n + offs, floor(a * 3.0f) + ceil(b * 3.0f), m);
  store(out + 2 * n + offs, pow(abs(a), b) + pow(abs(b), 1.5f), m);
}

// One byte buffer of 34-byte records (an f16 scale, then 32 int8): the scale read through
// reinterpret<f16>, at a byte offset and as half index, as the quantized kernels read theirs.
template <int BLOCK>
void reinterpret_records(Ptr<u8> records, Ptr<f32> out, Scalar<i32> n) {
  auto r = program_id(0) * BLOCK + arange<BLOCK>();
  auto m = r < n;
  auto scale = cast<f32>(load(reinterpret<f16>(records) + r * 17, m, 0));             // half index 17 r = byte 34 r
  auto again = cast<f32>(load(reinterpret<f16>(records + r * 34), m, 0));             // a block of pointers, reinterpreted
  auto q = cast<f32>(load(reinterpret<i8>(records + r * 34 + 2 + 31), m, 0));          // the record's last int8
  store(out + r, scale * q + again, m);
}

inline std::vector<tools::NamedKernel> all_kernels() {
  std::vector<tools::NamedKernel> k = tools::example_kernels();
  k.push_back(tools::named_kernel<row_and_column_sums<32, 64>>("row_and_column_sums"));
  k.push_back(tools::named_kernel<transpose<64, 32>>("transpose"));
  k.push_back(tools::named_kernel<reshape_and_argmax<256>>("reshape_and_argmax"));
  k.push_back(tools::named_kernel<loops_and_atomics<256>>("loops_and_atomics", 8));
  k.push_back(tools::named_kernel<int8_dot<i8, 32, 32, 64>>("int8_dot"));
  k.push_back(tools::named_kernel<int8_dot<u8, 32, 32, 64>>("uint8_dot"));
  k.push_back(tools::named_kernel<dot4_rows<8, 32>>("dot4_rows", 4));
  k.push_back(tools::named_kernel<bf16_math<64>>("bf16_math", 4));  // smaller than the CTA: duplicated elements
  k.push_back(tools::named_kernel<math_ops<256>>("math_ops", 4));
  k.push_back(tools::named_kernel<reinterpret_records<128>>("reinterpret_records", 4));
  // Tensor cores (sm_80+): f16 at the examples' 32 x 32 x 32 and at 128 x 128 x 32, bf16, i8.
  k.push_back(tools::named_kernel<tiled_matmul<f16, f32, 128, 128, 32>>("matmul_f16_128x128", 4));
  k.push_back(tools::named_kernel<tiled_matmul<f16, f32, 128, 128, 32>>("matmul_f16_128x128_w8", 8));
  k.push_back(tools::named_kernel<tiled_matmul<bf16, f32, 64, 64, 32>>("matmul_bf16", 4));
  k.push_back(tools::named_kernel<tiled_matmul<i8, i32, 64, 64, 64>>("matmul_i8", 4));
  k.push_back(tools::named_kernel<tiled_matmul<u8, i32, 64, 64, 64>>("matmul_u8", 4));  // mma.sync has no u8 in kdsl's table: FMAs before sm_90a
  k.push_back(tools::named_kernel<f8e4m3_convert<256>>("f8e4m3_convert", 4));
  k.push_back(tools::named_kernel<f8e4m3_copy<256>>("f8e4m3_copy", 4));
  // fp8 e4m3: wgmma k32 on sm_90a; elsewhere the operands widened to f16 (exact) for mma.sync.
  k.push_back(tools::named_kernel<tiled_matmul<f8e4m3, f32, 64, 64, 64>>("matmul_f8e4m3", 4));
  k.push_back(tools::named_kernel<tiled_matmul<f8e4m3, f32, 128, 128, 64>>("matmul_f8e4m3_128x128_w8", 8));
  k.push_back(tools::named_kernel<tiled_matmul<f8e4m3, f32, 32, 64, 64>>("matmul_f8e4m3_32_rows", 4));  // too few rows for sm_90a's warpgroups
  k.push_back(tools::named_kernel<matmul_relu_f16<64, 32, 32>>("matmul_relu_f16", 4));
  k.push_back(tools::named_kernel<attention_tile<32, 32, 64>>("attention_tile", 4));
  k.push_back(tools::named_kernel<tiled_matmul<f32, f32, 64, 64, 32, f32, DotPrecision::TF32>>("matmul_tf32", 4));
  // 64 rows: on sm_90a both dots on wgmma, P fed to the second from registers.
  k.push_back(tools::named_kernel<attention_tile<64, 64, 64>>("attention_tile_64", 4));
  // Causal flash attention at 64 query rows, 32 keys a step, D = 64, bf16.
  k.push_back(tools::named_kernel<examples::flash_attention<bf16, 64, 32, 64, true>>("flash_attention_causal_64", 4));
  // B as trans(W[N][K]); on sm_90a: one wgmma of n = 256, and two warpgroups at 8 warps.
  k.push_back(tools::named_kernel<tiled_matmul_nt<f16, 64, 256, 32>>("matmul_nt_f16_64x256", 4));
  k.push_back(tools::named_kernel<tiled_matmul_nt<bf16, 128, 64, 64>>("matmul_nt_bf16_128x64_w8", 8));
  // FMA: f32 operands, k not a multiple of 16, n not a multiple of 8, too few tiles for the warps.
  k.push_back(tools::named_kernel<tiled_matmul<f32, f32, 32, 32, 32>>("matmul_f32", 4));
  k.push_back(tools::named_kernel<tiled_matmul<f16, f32, 32, 32, 8>>("matmul_f16_k8", 4));
  k.push_back(tools::named_kernel<tiled_matmul<f16, f32, 32, 4, 16>>("matmul_f16_n4", 4));
  k.push_back(tools::named_kernel<tiled_matmul<f16, f32, 16, 16, 16>>("matmul_f16_one_tile", 4));
  return k;
}

inline const tools::NamedKernel &find(const std::string &name) {
  static const std::vector<tools::NamedKernel> kernels = all_kernels();
  for (const auto &k : kernels)
    if (k.name == name) return k;
  throw std::runtime_error("no test kernel " + name);
}

}  // namespace nvptx_test
