// nvptx_memops_test.cpp - scans and gather through the GPU lowering (NVIDIA and AMD flavoured, run in the SIMT emulator against the CPU backend); atomics, printing and asserts in PTX that ptxas assembles
#include <doctest/doctest.h>

#include <kdsl/kdsl.h>

#include "codegen/codegen.h"
#include "codegen/nvptx/ptxas.h"
#include "tests/codegen/emulator_compare.h"
#include "tests/scan_gather_kernels.h"

using namespace kdsl;
using namespace emulator_test;

namespace nvptx_memops {

template <class T, int BLOCK, bool REVERSE>
void scan_1d(Ptr<T> x, Ptr<T> sums, Ptr<T> maxes, Ptr<T> mins, Scalar<i32> n) {
  auto offs = program_id(0) * BLOCK + arange<BLOCK>();
  auto m = offs < n;
  auto v = load(x + offs, m, 3);
  store(sums + offs, cumsum(v, 0, REVERSE), m);
  store(maxes + offs, cummax(v, 0, REVERSE), m);
  store(mins + offs, cummin(v, 0, REVERSE), m);
}

using scan_gather_kernels::scan_2d;

// A scan of a loop-carried value and of a reduction's broadcast result (values that reach the
// scan through shared memory or another layout).
template <int R, int C>
void scan_after_reduce(Ptr<f32> x, Ptr<f32> out) {
  auto r = expand_dims<1>(arange<R>());
  auto c = expand_dims<0>(arange<C>());
  auto v = load(x + r * C + c);
  auto centered = v - expand_dims<0>(max<0>(v));
  store(out + r * C + c, cumsum(trans(cumsum(trans(centered), 1)), 1));
}

using scan_gather_kernels::gather_2d;

template <int BLOCK>
void gather_arange(Ptr<i32> index, Ptr<i32> out) {
  auto k = arange<BLOCK>();
  store(out + k, gather(arange<64>() * 3, load(index + k), 0));  // src is index arithmetic: recomputed, no shared copy
}

template <class T>
void atomics(Ptr<T> p, Ptr<T> v, Ptr<T> old, Scalar<i32> n) {
  auto offs = program_id(0) * 128 + arange<128>();
  auto m = offs < n;
  auto x = load(v + offs, m, 0);
  auto o = atomic_max(p + offs % 8, x, m) + atomic_min(p + 8 + offs % 8, x, m) + atomic_xchg(p + 16 + offs % 8, x, m) +
           atomic_cas(p + 24 + offs % 8, x, x + x, m);
  store(old + offs, o, m);
  store(old, atomic_max(p + 32, load(v)));  // a scalar atomic
}

void print_and_assert(Ptr<f32> x, Ptr<i64> y, Scalar<i32> n) {
  auto offs = program_id(0) * 64 + arange<64>();
  auto v = load(x + offs, offs < n, 0);
  device_print("x%", v, load(y + arange<8>()));
  device_print("n", n);
  device_assert(v < 100.0f, "x must stay below 100");
  device_assert(n > 0, "n > 0");
}

}  // namespace nvptx_memops

using namespace nvptx_memops;

namespace {

// Small integers as floats: every partial sum is exact, so both backends agree bit for bit.
template <class T>
std::vector<T> small_integers(size_t n, std::mt19937 &rng) {
  std::vector<T> v(n);
  for (T &x : v) x = T(std::uniform_int_distribution<int>(-8, 8)(rng));
  return v;
}

template <class T, int BLOCK, bool REVERSE>
double compare_scan_1d(const Flavour &f, int warps, int n, std::mt19937 &rng) {
  using S = typename T::storage;
  auto k = tools::named_kernel<scan_1d<T, BLOCK, REVERSE>>("scan_1d", warps);
  return compare(k, grid(cdiv(n, BLOCK)), {array(small_integers<S>(size_t(n), rng)), array(std::vector<S>(size_t(n))), array(std::vector<S>(size_t(n))),
                                           array(std::vector<S>(size_t(n))), value(n)},
                 f);
}

template <class T, int R, int C, int AXIS, bool REVERSE>
double compare_scan_2d(const Flavour &f, int warps, int rows, int cols, std::mt19937 &rng) {
  using S = typename T::storage;
  auto k = tools::named_kernel<scan_2d<T, R, C, AXIS, REVERSE>>("scan_2d", warps);
  size_t n = size_t(rows) * size_t(cols);
  return compare(k, grid(cdiv(rows, R)),
                 {array(small_integers<S>(n, rng)), array(std::vector<S>(n)), array(std::vector<S>(n)), array(std::vector<S>(n)), value(rows), value(cols)}, f);
}

codegen::CompiledObject compile_ptx(const tools::NamedKernel &k, const std::string &arch) {
  codegen::Options options;
  options.num_warps = k.num_warps;
  return codegen::compile(tools::trace_kernel(k.signature, tools::parse_specialization("aligned", k.signature)), "kdsl_" + k.name,
                          codegen::Target::named(arch), options);
}

bool contains(const std::string &text, const char *what) { return text.find(what) != std::string::npos; }

}  // namespace

// Layouts: several registers per thread and repetitions of the CTA tile (1024 over 4 warps),
// lanes and warps past the block's end (64 and 100 elements over 4 warps), one warp, 8 warps.
TEST_CASE("emulated: 1-D cumsum, cummax and cummin over lanes, warps and tile repetitions, forward and reverse") {
  const Flavour f = each_emulated_target();
  std::mt19937 rng(21);
  for (int warps : {1, 4, 8}) {
    CAPTURE(warps);
    CHECK(compare_scan_1d<f32, 1024, false>(f, warps, 3000, rng) == 0);
    CHECK(compare_scan_1d<f32, 1024, true>(f, warps, 3000, rng) == 0);
    CHECK(compare_scan_1d<i32, 64, false>(f, warps, 200, rng) == 0);
    CHECK(compare_scan_1d<i32, 64, true>(f, warps, 200, rng) == 0);
    CHECK(compare_scan_1d<f32, 100, true>(f, warps, 250, rng) == 0);
    CHECK(compare_scan_1d<f32, 100, false>(f, warps, 250, rng) == 0);
  }
}

TEST_CASE("emulated: scans along each axis of 2-D blocks of several shapes, ragged rows and columns") {
  const Flavour f = each_emulated_target();
  std::mt19937 rng(22);
  for (int warps : {2, 4}) {
    CAPTURE(warps);
    CHECK(compare_scan_2d<f32, 16, 64, 0, false>(f, warps, 40, 50, rng) == 0);
    CHECK(compare_scan_2d<f32, 16, 64, 1, false>(f, warps, 40, 50, rng) == 0);
    CHECK(compare_scan_2d<f32, 16, 64, 0, true>(f, warps, 40, 64, rng) == 0);
    CHECK(compare_scan_2d<f32, 16, 64, 1, true>(f, warps, 40, 64, rng) == 0);
    CHECK(compare_scan_2d<i32, 64, 8, 0, false>(f, warps, 100, 8, rng) == 0);
    CHECK(compare_scan_2d<i32, 64, 8, 1, true>(f, warps, 100, 7, rng) == 0);
    CHECK(compare_scan_2d<i32, 4, 128, 1, false>(f, warps, 9, 128, rng) == 0);
    CHECK(compare_scan_2d<i32, 4, 128, 0, true>(f, warps, 9, 100, rng) == 0);
  }
  CHECK(compare(tools::named_kernel<scan_after_reduce<32, 16>>("scan_after_reduce", 4), grid(1),
                {array(small_integers<float>(32 * 16, rng)), array(std::vector<float>(32 * 16))}, f) == 0);
}

TEST_CASE("emulated: gather along each axis (shared-memory round trip), out-of-range indices, and from index arithmetic") {
  const Flavour f = each_emulated_target();
  std::mt19937 rng(23);
  constexpr int R = 16, C = 32, K = 24;
  std::vector<int32_t> rows_index(size_t(K) * C), cols_index(size_t(R) * K), flat(128);
  for (auto &i : rows_index) i = std::uniform_int_distribution<int>(-2, R + 1)(rng);
  for (auto &i : cols_index) i = std::uniform_int_distribution<int>(-2, C + 1)(rng);
  for (auto &i : flat) i = std::uniform_int_distribution<int>(-3, 66)(rng);
  for (int warps : {1, 4}) {
    CAPTURE(warps);
    CHECK(compare(tools::named_kernel<gather_2d<f32, R, C, K>>("gather_2d", warps), grid(1),
                  {array(random_f32(size_t(R) * C, rng)), array(rows_index), array(cols_index), array(std::vector<float>(size_t(K) * C)),
                   array(std::vector<float>(size_t(R) * K))}, f) == 0);
    CHECK(compare(tools::named_kernel<gather_arange<128>>("gather_arange", warps), grid(1), {array(flat), array(std::vector<int32_t>(128))}, f) == 0);
  }
}

TEST_CASE("nvptx: atomics beyond add are global atomic instructions (f32 max/min by integer order), and ptxas assembles them") {
  bool have_ptxas = !codegen::nvptx::find_ptxas().empty();
  for (const char *arch : {"sm_80", "sm_90"}) {
    CAPTURE(arch);
    std::string s32 = compile_ptx(tools::named_kernel<atomics<i32>>("atomics_i32"), arch).ptx;
    CHECK(contains(s32, "atom.global.max.s32"));
    CHECK(contains(s32, "atom.global.min.s32"));
    CHECK(contains(s32, "atom.global.exch.b32"));
    CHECK(contains(s32, "atom.global.cas.b32"));
    std::string w32 = compile_ptx(tools::named_kernel<atomics<u32>>("atomics_u32"), arch).ptx;
    CHECK(contains(w32, "atom.global.max.u32"));
    CHECK(contains(w32, "atom.global.min.u32"));
    std::string s64 = compile_ptx(tools::named_kernel<atomics<i64>>("atomics_i64"), arch).ptx;
    CHECK(contains(s64, "atom.global.max.s64"));
    CHECK(contains(s64, "atom.global.cas.b64"));
    codegen::CompiledObject fp = compile_ptx(tools::named_kernel<atomics<f32>>("atomics_f32"), arch);
    // max: signed max of the bits for values with the sign clear, unsigned min otherwise
    CHECK(contains(fp.ptx, "atom.global.max.s32"));
    CHECK(contains(fp.ptx, "atom.global.min.u32"));
    CHECK(contains(fp.ptx, "atom.global.min.s32"));
    CHECK(contains(fp.ptx, "atom.global.max.u32"));
    if (have_ptxas) CHECK(fp.resources.assembled);
  }
}

TEST_CASE("nvptx: device_print calls vprintf, device_assert __assertfail with the message; ptxas assembles both") {
  bool have_ptxas = !codegen::nvptx::find_ptxas().empty();
  for (const char *arch : {"sm_80", "sm_90"}) {
    CAPTURE(arch);
    codegen::CompiledObject obj = compile_ptx(tools::named_kernel<print_and_assert>("print_and_assert"), arch);
    CHECK(contains(obj.ptx, "vprintf"));
    CHECK(contains(obj.ptx, "__assertfail"));
    // the strings, as bytes: "x%%" (a '%' doubled for printf) and the assert message
    auto bytes = [](const std::string &s) {
      std::string out;
      for (char ch : s) out += std::to_string(int(static_cast<unsigned char>(ch))) + ", ";
      return out;
    };
    CHECK(contains(obj.ptx, bytes("pid (%d, %d, %d) idx (%d) x%% (operand 0): %.8g").c_str()));
    CHECK(contains(obj.ptx, bytes("x must stay below 100").c_str()));
    if (have_ptxas) CHECK(obj.resources.assembled);
  }
}

TEST_CASE("nvptx: scans shuffle across lanes and meet across warps in shared memory; ptxas assembles them without spills") {
  bool have_ptxas = !codegen::nvptx::find_ptxas().empty();
  for (const char *arch : {"sm_80", "sm_90"}) {
    CAPTURE(arch);
    codegen::CompiledObject obj = compile_ptx(tools::named_kernel<scan_1d<f32, 1024, false>>("scan_1d_1024", 4), arch);
    CHECK(contains(obj.ptx, "shfl.sync.bfly.b32"));
    CHECK(contains(obj.ptx, "bar.sync"));
    CHECK(contains(obj.ptx, "st.shared"));
    codegen::CompiledObject gathered = compile_ptx(tools::named_kernel<gather_2d<f32, 16, 32, 24>>("gather_2d", 4), arch);
    CHECK(contains(gathered.ptx, "ld.shared"));
    if (!have_ptxas) continue;
    CHECK(obj.resources.assembled);
    CHECK(obj.resources.spill_store_bytes == 0);
    CHECK(gathered.resources.assembled);
  }
}
