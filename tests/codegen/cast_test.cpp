// cast_test.cpp - cast between every pair of element types (rounding, truncation, wrapping, bool) and bitcast
#include <kdsl/kdsl.h>

#include <bit>
#include <memory>
#include <optional>

#include "tests/test_util.h"

using namespace kdsl;
using namespace kdsl_test;

namespace cast_test {

constexpr int kBlock = 128;

// Casts one input to every element type.
template <class S>
void cast_all(Ptr<S> in, Ptr<f32> to_f32, Ptr<f16> to_f16, Ptr<bf16> to_bf16, Ptr<i8> to_i8, Ptr<u8> to_u8, Ptr<i16> to_i16,
              Ptr<i32> to_i32, Ptr<i64> to_i64, Ptr<u32> to_u32, Ptr<boolean> to_bool, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto m = offs < n;
  auto x = load(in + offs, m);
  store(to_f32 + offs, cast<f32>(x), m), store(to_f16 + offs, cast<f16>(x), m), store(to_bf16 + offs, cast<bf16>(x), m);
  store(to_i8 + offs, cast<i8>(x), m), store(to_u8 + offs, cast<u8>(x), m), store(to_i16 + offs, cast<i16>(x), m);
  store(to_i32 + offs, cast<i32>(x), m), store(to_i64 + offs, cast<i64>(x), m), store(to_u32 + offs, cast<u32>(x), m);
  store(to_bool + offs, cast<boolean>(x), m);
}

template <class S>
constexpr bool host_float = std::is_same_v<S, float> || std::is_same_v<S, half> || std::is_same_v<S, bfloat16>;

// An integer rounded to nearest even with `bits` significant bits, exactly (no detour through
// a narrower float, which would round twice).
inline double round_integer(bool negative, uint64_t magnitude, int bits) {
  int width = 64 - std::countl_zero(magnitude | 1);
  if (width > bits) {
    int shift = width - bits;
    uint64_t q = magnitude >> shift, rest = magnitude & ((uint64_t(1) << shift) - 1), half_way = uint64_t(1) << (shift - 1);
    if (rest > half_way || (rest == half_way && (q & 1))) ++q;
    return (negative ? -1 : 1) * std::ldexp(double(q), shift);
  }
  return (negative ? -1.0 : 1.0) * double(magnitude);
}

template <class T>
constexpr int significand_bits() {
  return std::is_same_v<T, f32> ? 24 : std::is_same_v<T, f16> ? 11 : 8;
}

// What cast<T>(x) must give, or nothing where it is undefined (NaN or out-of-range float to
// integer).
template <class T, class S>
std::optional<storage_t<T>> reference_cast(S x) {
  using D = storage_t<T>;
  if constexpr (std::is_same_v<D, bool>) {
    return as_double(x) != 0;  // NaN is true
  } else if constexpr (is_float(T::dtype)) {
    if constexpr (host_float<S>) {
      return to_storage<T>(as_double(x));  // float(x) is exact; one rounding to T
    } else {
      bool negative = false;
      uint64_t magnitude = uint64_t(x);
      if constexpr (std::is_signed_v<S>) negative = x < 0, magnitude = negative ? 0 - uint64_t(x) : uint64_t(x);
      return to_storage<T>(round_integer(negative, magnitude, significand_bits<T>()));  // exact in T, or past its range
    }
  } else if constexpr (host_float<S>) {
    double t = std::trunc(as_double(x));
    if (std::isnan(t) || t < double(std::numeric_limits<D>::min()) || t > double(std::numeric_limits<D>::max())) return std::nullopt;
    return D(t);
  } else {
    return D(x);  // integers wrap modulo 2^bits; bool is 0 or 1
  }
}

template <class D>
uint64_t bits_of(D v) {
  if constexpr (std::is_same_v<D, half> || std::is_same_v<D, bfloat16>) return v.bits;
  else if constexpr (std::is_same_v<D, float>) return std::bit_cast<uint32_t>(v);
  else return uint64_t(v);
}

template <class T, class S>
void check_target(const char *target, const HostArray<S> &in, const storage_t<T> *got) {
  size_t bad = 0, checked = 0;
  std::ostringstream first;
  first.precision(17);
  for (size_t i = 0; i < in.size(); ++i) {
    auto ref = reference_cast<T>(in[i]);
    if (!ref) continue;
    ++checked;
    bool nan = is_float(T::dtype) && std::isnan(as_double(*ref));
    bool same = nan ? std::isnan(as_double(got[i])) : bits_of(got[i]) == bits_of(*ref);  // signed zeros count
    if (!same && bad++ < 4)
      first << "\n  [" << i << "] " << as_double(in[i]) << " (bits 0x" << std::hex << bits_of(in[i]) << std::dec << ") gave "
            << as_double(got[i]) << ", expected " << as_double(*ref);
  }
  INFO("cast to ", std::string(target), ": ", bad, " of ", checked, " elements differ", first.str());
  CHECK(bad == 0);
  CHECK(checked > in.size() / 4);  // most inputs are in range of every target
}

// Inputs that reach every rounding case: random bit patterns, exact ties between f16 and
// between bf16 neighbours (even and odd), subnormals, the f16 overflow edge, everyday values.
template <class S>
HostArray<storage_t<S>> cast_inputs(std::mt19937 &rng, size_t n) {
  using H = storage_t<S>;
  HostArray<H> v = random_full_range<S>(rng, n);
  if constexpr (host_float<H>) {
    auto from_bits = [](uint32_t b) {
      if constexpr (std::is_same_v<H, float>) return std::bit_cast<float>(b);
      else return H::from_bits(uint16_t(b));
    };
    std::uniform_int_distribution<uint32_t> bits(0, std::is_same_v<H, float> ? 0xffffffffu : 0xffffu);
    for (size_t i = 0; i < n; i += 2) v[i] = from_bits(bits(rng));  // every exponent, NaN and inf included
    if constexpr (std::is_same_v<H, float>) {
      std::uniform_int_distribution<uint32_t> pick16(0, 0x7bfe), pick_bf(0, 0x7f7e);
      for (size_t i = 1; i < n; i += 8) {
        uint16_t h = uint16_t(pick16(rng));  // midway between two f16 neighbours, subnormals included
        v[i] = float((double(half::from_bits(h)) + double(half::from_bits(uint16_t(h + 1)))) / 2) * (i % 16 == 1 ? 1 : -1);
        uint16_t b = uint16_t(pick_bf(rng));
        if (i + 2 < n) v[i + 2] = float((double(bfloat16::from_bits(b)) + double(bfloat16::from_bits(uint16_t(b + 1)))) / 2);
        if (i + 4 < n) v[i + 4] = std::ldexp(std::uniform_real_distribution<float>(-1, 1)(rng), -14);  // f16 subnormal range
      }
    }
    const float edges[] = {65504.0f, 65519.0f, 65520.0f, -65520.0f, 0x1p-25f, 0x1.0001p-25f, 0x1p-24f, -0.0f, 0x1p-149f, 0.5f, -0.5f, 2.5f, 255.9f, -128.9f, 4294967295.0f, 3.0e9f};
    for (size_t i = 0; i < std::size(edges); ++i) v[n - 1 - 2 * i] = H(edges[i]);
  } else if constexpr (!std::is_same_v<H, bool> && sizeof(H) >= 4) {
    // Integers exactly between two bf16 (and f32) neighbours, which rounding twice gets wrong.
    const H ties[] = {H((1 << 24) + (1 << 16) + 1), H((1 << 24) + (1 << 16)), H((1 << 24) + 3 * (1 << 16)), H(-((1 << 24) + (1 << 16) + 1)),
                      H(16777217), H(0x7fffffff), H(65519), H(65520)};
    for (size_t i = 0; i < std::size(ties); ++i) v[n - 1 - 2 * i] = ties[i];
  }
  return v;
}

template <class S>
void check_casts(std::mt19937 &rng, int n) {
  CAPTURE(n);
  auto in = cast_inputs<S>(rng, size_t(n));
  HostArray<float> a(in.size());
  HostArray<half> b(in.size());
  HostArray<bfloat16> c(in.size());
  HostArray<int8_t> d(in.size());
  HostArray<uint8_t> e(in.size());
  HostArray<int16_t> f(in.size());
  HostArray<int32_t> g(in.size());
  HostArray<int64_t> h(in.size());
  HostArray<uint32_t> i(in.size());
  HostArray<bool> j(in.size());
  compile<cast_all<S>>(cpu())(grid(cdiv(n, kBlock)), in.data(), a.data(), b.data(), c.data(), d.data(), e.data(), f.data(), g.data(),
                               h.data(), i.data(), j.data(), n);
  check_target<f32>("f32", in, a.data()), check_target<f16>("f16", in, b.data()), check_target<bf16>("bf16", in, c.data());
  check_target<i8>("i8", in, d.data()), check_target<u8>("u8", in, e.data()), check_target<i16>("i16", in, f.data());
  check_target<i32>("i32", in, g.data()), check_target<i64>("i64", in, h.data()), check_target<u32>("u32", in, i.data());
  check_target<boolean>("bool", in, j.data());
}

// Bits reinterpreted: 32-bit, 16-bit and 8-bit types, round trips and cross-type.
void bitcasts(Ptr<u32> w, Ptr<i16> s, Ptr<i8> c, Ptr<f32> w_f32, Ptr<i32> w_i32, Ptr<f16> s_f16, Ptr<bf16> s_bf16, Ptr<i16> s_back,
              Ptr<bf16> f16_as_bf16, Ptr<u8> c_u8, Scalar<i32> n) {
  auto offs = program_id(0) * kBlock + arange<kBlock>();
  auto m = offs < n;
  auto words = load(w + offs, m);
  auto shorts = load(s + offs, m);
  auto h = bitcast<f16>(shorts);
  store(w_f32 + offs, bitcast<f32>(words), m);
  store(w_i32 + offs, bitcast<i32>(bitcast<f32>(words)), m);
  store(s_f16 + offs, h, m);
  store(s_bf16 + offs, bitcast<bf16>(shorts), m);
  store(s_back + offs, bitcast<i16>(bitcast<bf16>(shorts)), m);
  store(f16_as_bf16 + offs, bitcast<bf16>(h), m);
  store(c_u8 + offs, bitcast<u8>(load(c + offs, m)), m);
}

bool f16_nan(uint16_t b) { return (b & 0x7c00) == 0x7c00 && (b & 0x3ff); }

}  // namespace cast_test

TEST_CASE_TEMPLATE("codegen: cast between every pair of element types", S, f32, f16, bf16, i8, u8, i16, i32, i64, u32, boolean) {
  KDSL_TEST_RNG(rng);
  for (int n : {cast_test::kBlock * 8, cast_test::kBlock * 8 + 7}) cast_test::check_casts<S>(rng, n);
}

TEST_CASE("codegen: cast rounds f32 to f16 and bf16 to nearest even") {
  // Ties go to the even neighbour; just past a tie goes up; subnormals and overflow.
  float in[] = {1 + 0x1p-11f, 1 + 3 * 0x1p-11f, 1 + 0x1.01p-11f, 65520.0f, 65519.0f, 0x1p-25f, 0x1.8p-24f, 1 + 0x1p-8f, 1 + 3 * 0x1p-8f, 0x1p-133f};
  std::vector<float> v(in, in + std::size(in));
  v.push_back(std::bit_cast<float>(0x7f800001u));  // a NaN whose payload is all in the low 16 bits
  v.resize(cast_test::kBlock, 0.0f);
  const uint16_t f16_bits[] = {0x3c00, 0x3c02, 0x3c01, 0x7c00, 0x7bff, 0x0000, 0x0002, 0x3c04, 0x3c0c, 0x0000};
  const uint16_t bf16_bits[] = {0x3f80, 0x3f80, 0x3f80, 0x4780, 0x4780, 0x3300, 0x33c0, 0x3f80, 0x3f82, 0x0001};
  HostArray<float> a(v.size());
  HostArray<half> b(v.size());
  HostArray<bfloat16> c(v.size());
  HostArray<int8_t> d(v.size());
  HostArray<uint8_t> e(v.size());
  HostArray<int16_t> f(v.size());
  HostArray<int32_t> g(v.size());
  HostArray<int64_t> h(v.size());
  HostArray<uint32_t> i(v.size());
  HostArray<bool> j(v.size());
  compile<cast_test::cast_all<f32>>(cpu())(grid(1), v.data(), a.data(), b.data(), c.data(), d.data(), e.data(), f.data(), g.data(), h.data(),
                                           i.data(), j.data(), int(v.size()));
  for (size_t k = 0; k < std::size(in); ++k) {
    CAPTURE(in[k]);
    CHECK(b[k].bits == f16_bits[k]);
    CHECK(c[k].bits == bf16_bits[k]);
  }
  CHECK(cast_test::f16_nan(b[std::size(in)].bits));
  CHECK(std::isnan(float(c[std::size(in)])));  // not inf
}

TEST_CASE("codegen: bitcast keeps the bits") {
  KDSL_TEST_RNG(rng);
  const int n = 1 << 16;  // every 16-bit pattern
  std::vector<uint32_t> w(n);
  std::vector<int16_t> s(n), s_back(n);
  std::vector<int8_t> c(n);
  for (int k = 0; k < n; ++k) w[size_t(k)] = uint32_t(rng()), s[size_t(k)] = int16_t(k), c[size_t(k)] = int8_t(k);
  std::vector<float> w_f32(n);
  std::vector<int32_t> w_i32(n);
  std::vector<half> s_f16(n);
  std::vector<bfloat16> s_bf16(n), f16_as_bf16(n);
  std::vector<uint8_t> c_u8(n);
  compile<cast_test::bitcasts>(cpu())(grid(cdiv(n, cast_test::kBlock)), w.data(), s.data(), c.data(), w_f32.data(), w_i32.data(), s_f16.data(),
                                      s_bf16.data(), s_back.data(), f16_as_bf16.data(), c_u8.data(), n);
  size_t bad32 = 0, bad16 = 0, bad8 = 0;
  for (size_t k = 0; k < size_t(n); ++k) {
    uint16_t bits = uint16_t(s[k]);
    bool nan32 = std::isnan(std::bit_cast<float>(w[k]));
    bad32 += (!nan32 && std::bit_cast<uint32_t>(w_f32[k]) != w[k]) || uint32_t(w_i32[k]) != w[k];
    // An f16 NaN may come back quieted (the signalling bit set); every other pattern is exact.
    bool nan16 = cast_test::f16_nan(bits);
    bad16 += nan16 ? !cast_test::f16_nan(s_f16[k].bits) || !cast_test::f16_nan(f16_as_bf16[k].bits) : s_f16[k].bits != bits || f16_as_bf16[k].bits != bits;
    bad16 += s_bf16[k].bits != bits || uint16_t(s_back[k]) != bits;
    bad8 += c_u8[k] != uint8_t(c[k]);
  }
  CHECK(bad32 == 0);
  CHECK(bad16 == 0);
  CHECK(bad8 == 0);
}
