// specialization_test.cpp - "16,1,_": the one parser and formatter round-trip, the rules a launch follows, and each malformed text's error
#include <doctest/doctest.h>

#include <random>

#include <kdsl/kdsl.h>

#include "runtime/specialization_ir.h"
#include "tests/test_util.h"

using namespace kdsl;

namespace {

detail::TypeDesc pointer_param(DType t) { return {t, true}; }
detail::TypeDesc scalar_param(DType t) { return {t, false}; }

}  // namespace

TEST_CASE("specialization: text and typed spellings round-trip through the one parser and formatter") {
  KDSL_TEST_RNG(rng);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<ArgSpec> classes(rng() % 40);
    for (ArgSpec &c : classes) c = ArgSpec(rng() % 3);
    Specialization typed(classes);
    std::string text = typed.str();
    CAPTURE(text);
    CHECK(Specialization::parse(text) == typed);
    CHECK(Specialization(text).classes() == classes);
    // The cache key and the log write the launch's classes with the same formatter.
    CHECK(detail::specialization_text(detail::to_arg_classes(classes)) == text);
  }
  CHECK(Specialization{ArgSpec::Divisible16, ArgSpec::EqualToOne, ArgSpec::None}.str() == "16,1,_");
  CHECK(Specialization("16,1,_") == Specialization{ArgSpec::Divisible16, ArgSpec::EqualToOne, ArgSpec::None});
  // As the log prints it, with spaces: the same.
  CHECK(Specialization::parse("[16, _, 1]").str() == "16,_,1");
  CHECK(Specialization::parse("aligned") == Specialization::aligned());
  CHECK(Specialization::parse("none") == Specialization::none());
  CHECK(Specialization().str() == "aligned");
  CHECK(Specialization::none().str() == "none");
  CHECK(Specialization::parse("").classes().empty());
  CHECK(Specialization::parse("").is_per_argument());
}

TEST_CASE("specialization: aligned and none classify arguments as a launch with aligned (or arbitrary) arguments would") {
  std::vector<detail::TypeDesc> params = {pointer_param(DType::F16), scalar_param(DType::F32), scalar_param(DType::I32), scalar_param(DType::I64), pointer_param(DType::U8)};
  using enum ArgSpec;
  CHECK(Specialization::aligned().classes_for(params, "k") == std::vector<ArgSpec>{Divisible16, None, Divisible16, Divisible16, Divisible16});
  CHECK(Specialization::none().classes_for(params, "k") == std::vector<ArgSpec>(5, None));
  CHECK(Specialization("16,_,1,_,_").classes_for(params, "k") == std::vector<ArgSpec>{Divisible16, None, EqualToOne, None, None});
}

TEST_CASE("specialization: a malformed text, a wrong length and a class no launch gives are errors naming the entry, kernel and argument") {
  CHECK_THROWS_WITH_AS(Specialization::parse("16,x,_"), doctest::Contains("specialization '16,x,_': entry 1 is 'x'; each entry is 16"), Error);
  CHECK_THROWS_WITH_AS(Specialization::parse("16,,1"), doctest::Contains("entry 1 is ''"), Error);
  CHECK_THROWS_WITH_AS(Specialization("aligned,16"), doctest::Contains("entry 0 is 'aligned'"), Error);
  std::vector<detail::TypeDesc> params = {pointer_param(DType::F32), scalar_param(DType::F32), scalar_param(DType::I32)};
  CHECK_THROWS_WITH_AS(Specialization("16,_").classes_for(params, "mine<64>"),
                       doctest::Contains("specialization '16,_' has 2 entries; kernel 'mine<64>' has 3 arguments (Ptr<f32>, Scalar<f32>, Scalar<i32>)"), Error);
  CHECK_THROWS_WITH_AS(Specialization("1,_,_").classes_for(params, "mine<64>"),
                       doctest::Contains("argument 0 of kernel 'mine<64>' is a pointer (Ptr<f32>), which is never specialized as 1"), Error);
  CHECK_THROWS_WITH_AS(Specialization("16,16,_").classes_for(params, "mine<64>"),
                       doctest::Contains("argument 1 of kernel 'mine<64>' is a float (Scalar<f32>), which is never specialized; use _"), Error);
}
