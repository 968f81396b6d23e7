// library_int_dot.cpp - the Library's integer-dot products on the CPU: x quantized into scratch, then the format's dot4 kernel
#include "kernels/library_int_dot.h"

#include <algorithm>
#include <string>
#include <type_traits>

#include "kernels/int_dot_policy.h"
#include "kernels/library_device.h"
#include "kernels/library_tuning.h"
#include "kernels/matmul_int_tiles.h"
#include "kernels/matvec_int8_sums.h"
#include "kernels/quantize_activations.h"
#include "kernels/row_chunks.h"

namespace kdsl::kernels::detail {
namespace {

// Block sizes: the product kernels take kRows weight rows one block at a time (as the f32
// decode kernels do, library_quantized.cpp), products of up to kTileRows rows of x are cut
// into few-row launches (run_rows, below), and the kernels prefetch a
// block's bytes kPrefetchBytes ahead: one line for the 32-element formats, kKQuantLines for a
// k-quant super-block (Q6_K's 210 bytes span up to 5 lines); a quantize program takes a row,
// one block of 32 or 256 values a step (quantize_activations.h). With 8 blocks of 32 side by
// side, the vectorizer laid the blocks across lanes and gathered their values: a 512-row
// prompt's quantization took 2-3x as long (bench/RESULTS.md, the entry "Activation
// quantization one block a program").
constexpr int kRows = 8, kTileRows = 16;
constexpr int kPrefetchBytes = 512, kKQuantPrefetchBytes = 1024, kKQuantLines = 4;

// The weight rows a single-row (decode) program takes, a tuned point per format and shape:
// kRows is the hand-set default (the few-row and prefill launches keep it), and 4 or 16 rows
// measured faster for some formats on the development VM (bench/RESULTS.md, 2026-12-03).
struct IntDotDecodeConfig {
  int rows;
  std::string label() const { return std::to_string(rows) + " rows"; }
};
inline constexpr IntDotDecodeConfig kIntDotDecodeCandidates[] = {{kRows}, {4}, {16}};

// The few-row launches' programs, a tuned point per format and shape: rows of x by weight rows.
// The kernels keep [x rows, weight rows, 4] lanes across their loop; 4 x 4 measured ahead of
// 2 x 8 for Q8_0 and Q4_0 on the development VM and 4 x 8 about even with it
// (bench/RESULTS.md, 2026-12-04), 4 x 8 is what the formats with sums ran.
struct IntDotRowsConfig {
  int x_rows, w_rows;
  std::string label() const { return std::to_string(x_rows) + "x" + std::to_string(w_rows); }
};
inline constexpr IntDotRowsConfig kIntDotFewCandidates[] = {{4, 4}, {2, 8}, {4, 8}};
inline constexpr IntDotRowsConfig kIntDotFewSumsCandidates[] = {{4, 8}, {4, 4}, {2, 8}};

// A tuned point's names in records and logs: "<point><q4_0>", "<point><q4_0,bias>".
struct IntDotPoints {
  std::string decode, few_rows;
};

// run.template operator()<BR, BN>(first, count, use) for each launch over rows
// [first, first + count) of x, BR rows of x by BN weight rows a program: 1 row for decode, BN
// tuned (the policy's `name` and the bucketed N and K key it); a few rows in power-of-two
// chunks of at most the policy's few_rows_launch (row_chunks.h: a kernel computes all BR of
// its rows, clamped copies included), BR and BN tuned from `FewCs` (keyed by the bucketed rows
// too); one launch for more (a prefill). `use` launches the kernel, or compiles it for the
// tuner (library_tuning.h).
//
// kMostRows is the rows of x one prefill program takes (a launch of more rows has more programs
// along axis 1, each reading the weights again, from cache). The kernels keep 4 f32 lanes per
// (x row, weight row) across their loop: 2 rows of x by 8 weight rows measured best for Q8_0 /
// Q4_0 prefill programs, and 4 by 8 for the formats with sums (bench/RESULTS.md, 2026-12-03,
// "integer-dot kernels: four rows a vpdpbusd"); the few-row launches tune theirs (above).
template <int kMostRows, const auto &FewCs, class Run>
void run_rows(Library::Impl &im, const IntDotPoints &points, int rows, int N, int K, int few_rows_launch, Run &&run) {
  const std::string &decode_point = points.decode;
  auto few = [&](int first, int count) {
    launch_tuned<FewCs>(im, points.few_rows, "rows,N,K", tune_bucket(count), tune_bucket(N), tune_bucket(K), [&]<class Use>(int i, Use use) {
      with_candidate<FewCs>(i, [&]<IntDotRowsConfig C>() { run.template operator()<C.x_rows, C.w_rows>(first, count, use); });
    });
  };

  auto decode = [&](int first) {
    launch_tuned<kIntDotDecodeCandidates>(im, decode_point, "N,K", tune_bucket(N), tune_bucket(K), 0, [&]<class Use>(int i, Use use) {
      with_candidate<kIntDotDecodeCandidates>(i, [&]<IntDotDecodeConfig C>() { run.template operator()<1, C.rows>(first, 1, use); });
    });
  };
  if (rows == 1) {
    decode(0);
  } else if (rows <= kTileRows) {
    for_few_row_launches(
        im, rows,
        [&](int first, int count) {
          if (count == 1) decode(first);
          else few(first, count);
        },
        few_rows_launch);
  } else {
    run.template operator()<kMostRows, kRows>(0, rows, LaunchIt{});
  }
}

// Prefill tiles (has_prefill_tiles, matmul_int_tiles.h): BM x kPrefillTileN outputs a
// program, BM the rows there are, from kPrefillTileLo up to kPrefillTileM.
constexpr int kPrefillTileLo = 32, kPrefillTileM = 128, kPrefillTileN = 32;

// x's rows quantized into the Library's scratch: int8 quants, an f32 scale per BE values and
// the integer sum of each GS quants (quantize_activations_sums). The scratch holds at least
// `padded_rows` rows; those past `rows` hold zeros or an earlier launch's rows (finite).
struct QuantizedX {
  int8_t *quants;
  float *scales;
  int32_t *sums;
};
// Rows made by a step (ActivationRows::made) are made in the same launch.
template <int BE, int GS>
QuantizedX quantize_x(Library::Impl &im, const ActivationRows &x, int rows, int K, int padded_rows = 0) {
  const int blocks = K / BE;
  const auto g = grid(rows);
  const size_t held = size_t(std::max(rows, padded_rows));
  QuantizedX q{reserve(im, im.activation_quants, held * size_t(K)), reserve(im, im.activation_scales, held * size_t(blocks)),
               reserve(im, im.activation_sums, held * size_t(K / GS))};
  if (!x.made) {
    im.kernel<quantize_activations_sums<BE, GS>>()(g, x.x, q.quants, q.scales, q.sums, K);
    return q;
  }
  switch (*x.made) {
    case MadeRows::RmsNorm:
      im.kernel<quantize_made_rows<BE, GS, MadeRows::RmsNorm>>()(g, x.x, x.norm_w, x.norm_w, q.quants, q.scales, q.sums, K, x.eps);
      break;
    case MadeRows::AddRmsNorm:
      im.kernel<quantize_made_rows<BE, GS, MadeRows::AddRmsNorm>>()(g, x.written, x.other, x.norm_w, q.quants, q.scales, q.sums, K, x.eps);
      break;
    case MadeRows::Swiglu:
      // norm_w unread: the gate stands in for it.
      im.kernel<quantize_made_rows<BE, GS, MadeRows::Swiglu>>()(g, x.x, x.other, x.x, q.quants, q.scales, q.sums, K, x.eps);
      break;
  }
  return q;
}

// How integer-dot policy P's activations are quantized: blocks of kElements values with the
// integer sum of every kSumGroup of them. kSums: the formats whose blocks have offsets
// (matvec_int8_sums.h), in their groups. The others (matvec_int8.h) take ggml's Q8_1 blocks,
// 32 values and their sum: Q4_0 takes its -8 off against the sum, Q8_0 and IQ4_NL leave it
// unread (as their prefill tiles do), so that the 32-value formats share one quantizer.
template <class P>
struct ActivationBlocks {
  static constexpr bool kSums = requires { P::kSumGroup; };
  static constexpr int kElements = [] {
    if constexpr (kSums) return P::kBlockElements;
    else return P::Format::kBlockElements;
  }();
  static constexpr int kSumGroup = [] {
    if constexpr (kSums) return P::kSumGroup;
    else return 32;
  }();
};

// x quantized as tiles policy T's activation blocks ask (its block, its sum group), then the
// tiles over all its rows. The tiles read x's rows unclamped, whole tiles of them
// (matmul_int_tiles.h): the scratch holds rows to a multiple of kPrefillTileM, which every
// tile height divides.
template <class T>
void run_prefill_tiles(Library::Impl &im, const ActivationRows &x, const void *w, const float *bias, float *out, int rows, int N, int K) {
  const QuantizedX q = quantize_x<T::kBlockElements, T::kSumGroup>(im, x, rows, K, cdiv(rows, kPrefillTileM) * kPrefillTileM);
  const float *b = bias ? bias : out;  // unread without a bias
  auto wq = static_cast<const uint8_t *>(w);
  with_block<kPrefillTileLo, kPrefillTileM>("matmul", "rows", std::min(rows, kPrefillTileM), [&]<int BM>() {
    auto g = grid(cdiv(rows, BM), cdiv(N, kPrefillTileN));
    if (bias) im.kernel<matmul_int_tiles<T, BM, kPrefillTileN, true>>()(g, q.quants, q.scales, q.sums, wq, b, out, rows, N, K);
    else im.kernel<matmul_int_tiles<T, BM, kPrefillTileN, false>>()(g, q.quants, q.scales, q.sums, wq, b, out, rows, N, K);
  });
}

// x quantized into scratch, then the format's kernel over the launches run_rows makes. Q8_0
// and Q4_0 (matvec_int8.h) meet 32-value activation blocks with a scale each, in programs of
// 2 rows of x; the formats with offsets (matvec_int8_sums.h) need the blocks' group sums too,
// in programs of 4 rows (2 rows or 16 measured slower for them: bench/RESULTS.md,
// 2026-12-03, "integer-dot kernels: four rows a vpdpbusd").
template <class F, class P>
void run_int_dot(Library::Impl &im, const ActivationRows &x, const void *w, const float *bias, float *out, int rows, int N, int K, int few_rows_launch,
                 const IntDotPoints &points) {
  if constexpr (has_prefill_tiles<F>) {
    if (rows > kTileRows && (takes_prefill_tiles<F>(im.device) || im.prefill_tiles_everywhere))
      return run_prefill_tiles<typename int_dot_policy<F>::tiles>(im, x, w, bias, out, rows, N, K);
  }
  constexpr bool kSums = ActivationBlocks<P>::kSums;
  constexpr int BE = ActivationBlocks<P>::kElements, GS = ActivationBlocks<P>::kSumGroup;
  constexpr bool kSuper = BE > 32;
  constexpr int kPrefetch = kSuper ? kKQuantPrefetchBytes : kPrefetchBytes;
  [[maybe_unused]] constexpr int kLines = kSuper ? kKQuantLines : 1;  // the formats with sums only
  const float *b = bias ? bias : out;  // unread without a bias
  const int blocks = K / BE;
  const QuantizedX xq = quantize_x<BE, GS>(im, x, rows, K);
  auto run = [&]<int BR, int BN, class Use>(int first, int count, Use use) {
    auto g = grid(cdiv(N, BN), cdiv(count, BR));
    const int8_t *q = xq.quants + int64_t(first) * K;
    const float *d = xq.scales + int64_t(first) * blocks;
    const int32_t *sums = xq.sums + int64_t(first) * (K / GS);
    float *o = out + int64_t(first) * N;
    if constexpr (kSums) {
      auto wq = static_cast<const uint8_t *>(w);
      if (bias) use(im.kernel<matvec_int8_sums<P, BR, BN, true, kPrefetch, kLines>>(), g, q, d, sums, wq, b, o, count, N, K);
      else use(im.kernel<matvec_int8_sums<P, BR, BN, false, kPrefetch, kLines>>(), g, q, d, sums, wq, b, o, count, N, K);
    } else {
      auto wq = static_cast<const typename P::Format::Quant::storage *>(w);
      if (bias) use(im.kernel<matvec_int8<P, BR, BN, true, kPrefetch>>(), g, q, d, sums, wq, b, o, count, N, K);
      else use(im.kernel<matvec_int8<P, BR, BN, false, kPrefetch>>(), g, q, d, sums, wq, b, o, count, N, K);
    }
  };
  if constexpr (kSums) run_rows<4, kIntDotFewSumsCandidates>(im, points, rows, N, K, few_rows_launch, run);
  else run_rows<2, kIntDotFewCandidates>(im, points, rows, N, K, few_rows_launch, run);
}

// The most rows of x this Library sends through format F's integer kernels.
template <class F>
int int_dot_rows(const Library::Impl &im) {
  return im.integer_dot_rows < 0 ? default_int_dot_rows<F>(im.device) : im.integer_dot_rows;
}

// x quantized once, then one launch for a decode row and few-row launches of 4-row programs
// (the formats with sums' best few-row programs as stored: run_int_dot's; 2-row ones for Q8_0,
// Q4_0 and IQ4_NL, as theirs) over the groups.
template <class F, class P, int R>
void run_int_dot_grouped(Library::Impl &im, const ActivationRows &x, const void *w, const float *bias, float *out, int rows, int N, int K) {
  constexpr bool kSums = ActivationBlocks<P>::kSums;
  constexpr int BE = ActivationBlocks<P>::kElements, GS = ActivationBlocks<P>::kSumGroup;
  constexpr int kFewRows = kSums ? 4 : 2;
  const int blocks = K / BE;
  const QuantizedX xq = quantize_x<BE, GS>(im, x, rows, K);
  const float *b = bias ? bias : out;  // unread without a bias
  auto wq = static_cast<const uint8_t *>(w);
  auto launch = [&]<int BR>(int first, int count) {
    auto g = grid(N / R, cdiv(count, BR));
    const int8_t *q = xq.quants + int64_t(first) * K;
    const float *d = xq.scales + int64_t(first) * blocks;
    const int32_t *sums = xq.sums + int64_t(first) * (K / GS);
    float *o = out + int64_t(first) * N;
    constexpr int64_t kAhead = grouped_prefetch<F>();
    if constexpr (kSums) {
      if (bias) im.kernel<matvec_grouped_sums<P, BR, R, true, kAhead>>()(g, q, d, sums, wq, b, o, count, N, K);
      else im.kernel<matvec_grouped_sums<P, BR, R, false, kAhead>>()(g, q, d, sums, wq, b, o, count, N, K);
    } else {
      if (bias) im.kernel<matvec_grouped_int8<P, BR, R, true, kAhead>>()(g, q, d, sums, wq, b, o, count, N, K);
      else im.kernel<matvec_grouped_int8<P, BR, R, false, kAhead>>()(g, q, d, sums, wq, b, o, count, N, K);
    }
  };
  for_few_row_launches(
      im, rows,
      [&](int first, int count) {
        if (count == 1) launch.template operator()<1>(first, count);
        else launch.template operator()<kFewRows>(first, count);
      },
      int_dot_policy<F>::few_rows_launch);
}

}  // namespace

template <class F>
int int_dot_row_group(const Library::Impl &im, int64_t N) {
  const int R = row_group_on<F>(im.device);
  if (R == 1 || !im.row_groups || !dispatches_for_cpu(im) || N % R != 0 || int_dot_rows<F>(im) < 1) return 1;
  return R;
}

template <class F>
bool matmul_int_dot_grouped(Library::Impl &im, const ActivationRows &x, const void *w, const float *bias, float *out, int rows, int N, int K) {
  if (!dispatches_for_cpu(im) || rows > std::min(kTileRows, int_dot_rows<F>(im))) return false;
  using Policy = int_dot_policy<F>;
  if constexpr (requires { Policy::row_group; }) {
    auto run = [&]<int R>() {
      if constexpr (requires { typename Policy::without_vnni; }) {
        if (!has_vnni(im.device)) return run_int_dot_grouped<F, typename Policy::without_vnni, R>(im, x, w, bias, out, rows, N, K);
      }
      run_int_dot_grouped<F, typename Policy::type, R>(im, x, w, bias, out, rows, N, K);
    };
    switch (row_group_on<F>(im.device)) {
      case 8: return run.template operator()<8>(), true;
      case 16: return run.template operator()<16>(), true;
      default: break;
    }
  }
  return false;
}

template <class F>
bool matmul_int_dot(Library::Impl &im, const ActivationRows &x, const void *w, const float *bias, float *out, int rows, int N, int K) {
  using P = typename int_dot_policy<F>::type;
  if constexpr (std::is_void_v<P>) {
    return false;
  } else {
    if (!dispatches_for_cpu(im) || rows > int_dot_rows<F>(im)) return false;
    constexpr int few_rows_launch = int_dot_policy<F>::few_rows_launch;
    auto named = [](const char *point, bool with_bias) {
      return std::string(point) + "<" + int_dot_policy<F>::name + (with_bias ? ",bias>" : ">");
    };
    static const IntDotPoints points[2] = {{named("matmul.int_dot_decode", false), named("matmul.int_dot_rows", false)},
                                           {named("matmul.int_dot_decode", true), named("matmul.int_dot_rows", true)}};
    run_int_dot<F, P>(im, x, w, bias, out, rows, N, K, few_rows_launch, points[bias != nullptr]);
    return true;
  }
}

// One instantiation per row of weight_types.def with block kernels.
#define KDSL_INT_DOT_None(Name)
#define KDSL_INT_DOT_Plain(Name)
#define KDSL_INT_DOT_Scaled(Name)                                                                                                   \
  template bool matmul_int_dot<Name##Format>(Library::Impl &, const ActivationRows &, const void *, const float *, float *, int, int, int);         \
  template bool matmul_int_dot_grouped<Name##Format>(Library::Impl &, const ActivationRows &, const void *, const float *, float *, int, int, int); \
  template int int_dot_row_group<Name##Format>(const Library::Impl &, int64_t);
#define KDSL_INT_DOT_Decoded(Name) KDSL_INT_DOT_Scaled(Name)
#define KDSL_WEIGHT_TYPE(Name, id, name, elements, bytes, Layout, kernels, ftype) KDSL_INT_DOT_##kernels(Name)
#include <kdsl/formats/weight_types.def>
#undef KDSL_WEIGHT_TYPE
#undef KDSL_INT_DOT_None
#undef KDSL_INT_DOT_Plain
#undef KDSL_INT_DOT_Scaled
#undef KDSL_INT_DOT_Decoded

}  // namespace kdsl::kernels::detail
