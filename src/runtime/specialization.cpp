// specialization.cpp - the one parser and formatter of "16,1,_", and the rule a launch classifies arguments by
#include <kdsl/specialization.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <kdsl/error.h>
#include <kdsl/kernel.h>

#include "runtime/specialization_ir.h"

namespace kdsl {
namespace {

constexpr std::string_view kAligned = "aligned", kNone = "none";

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

const char *entry_text(ArgSpec c) {
  switch (c) {
    case ArgSpec::Divisible16: return "16";
    case ArgSpec::EqualToOne: return "1";
    case ArgSpec::None: return "_";
  }
  internal_error("an ArgSpec outside its enum");
}

std::string type_text(const detail::TypeDesc &t) { return fmt::format("{}<{}>", t.is_ptr ? "Ptr" : "Scalar", dtype_name(t.elem)); }

}  // namespace

Specialization Specialization::none() {
  Specialization s;
  s.rule_ = Rule::NoneKnown;
  return s;
}

Specialization Specialization::parse(std::string_view text) {
  std::string_view body = trim(text);
  if (body == kAligned) return aligned();
  if (body == kNone) return none();
  if (body.size() >= 2 && body.front() == '[' && body.back() == ']') body = trim(body.substr(1, body.size() - 2));
  std::vector<ArgSpec> classes;
  if (body.empty()) return Specialization(classes);
  for (size_t start = 0;;) {
    size_t end = body.find(',', start);
    std::string_view item = trim(body.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (item == "16") classes.push_back(ArgSpec::Divisible16);
    else if (item == "1") classes.push_back(ArgSpec::EqualToOne);
    else if (item == "_") classes.push_back(ArgSpec::None);
    else
      throw Error(fmt::format("specialization '{}': entry {} is '{}'; each entry is 16 (divisible by 16, or a pointer aligned to 16 bytes), "
                              "1 (equal to 1) or _ (nothing known), or the whole is 'aligned' or 'none'",
                              text, classes.size(), item));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return Specialization(std::move(classes));
}

std::string Specialization::str() const {
  if (rule_ == Rule::Aligned) return std::string(kAligned);
  if (rule_ == Rule::NoneKnown) return std::string(kNone);
  std::string out;
  for (size_t i = 0; i < classes_.size(); ++i) {
    if (i) out += ',';
    out += entry_text(classes_[i]);
  }
  return out;
}

std::vector<ArgSpec> Specialization::classes_for(const std::vector<detail::TypeDesc> &params, std::string_view kernel_name) const {
  std::vector<ArgSpec> out(params.size(), ArgSpec::None);
  if (rule_ == Rule::NoneKnown) return out;
  if (rule_ == Rule::Aligned) {
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i].is_ptr || (!is_float(params[i].elem) && !params[i].no_specialize)) out[i] = ArgSpec::Divisible16;
    return out;
  }
  auto signature = [&] {
    std::vector<std::string> types;
    for (const detail::TypeDesc &t : params) types.push_back(type_text(t));
    return fmt::format("{}", fmt::join(types, ", "));
  };
  if (classes_.size() != params.size())
    throw Error(fmt::format("specialization '{}' has {} entries; kernel '{}' has {} arguments ({})", str(), classes_.size(), kernel_name,
                            params.size(), signature()));
  for (size_t i = 0; i < params.size(); ++i) {
    const detail::TypeDesc &p = params[i];
    // A launch never gives these classes, so code compiled for them would never be found.
    if (p.is_ptr && classes_[i] == ArgSpec::EqualToOne)
      throw Error(fmt::format("specialization '{}': argument {} of kernel '{}' is a pointer ({}), which is never specialized as 1; use 16 or _",
                              str(), i, kernel_name, type_text(p)));
    if (p.no_specialize && classes_[i] != ArgSpec::None)
      throw Error(fmt::format("specialization '{}': argument {} of kernel '{}' is a Dynamic scalar ({}), which is never specialized; use _",
                              str(), i, kernel_name, type_text(p)));
    if (!p.is_ptr && is_float(p.elem) && classes_[i] != ArgSpec::None)
      throw Error(fmt::format("specialization '{}': argument {} of kernel '{}' is a float ({}), which is never specialized; use _", str(), i,
                              kernel_name, type_text(p)));
  }
  return classes_;
}

ArgSpec launch_arg_spec(const detail::TypeDesc &param, const ArgValue &arg) {
  if (param.is_ptr) return arg.bits % 16 == 0 ? ArgSpec::Divisible16 : ArgSpec::None;
  if (is_float(param.elem) || param.no_specialize) return ArgSpec::None;
  int64_t v = int64_t(arg.bits);
  if (v == 1) return ArgSpec::EqualToOne;
  return v % 16 == 0 ? ArgSpec::Divisible16 : ArgSpec::None;
}

namespace detail {

static_assert(uint8_t(ArgSpec::None) == uint8_t(ir::ArgClass::None) && uint8_t(ArgSpec::Divisible16) == uint8_t(ir::ArgClass::Divisible16) &&
                  uint8_t(ArgSpec::EqualToOne) == uint8_t(ir::ArgClass::EqualToOne),
              "kdsl::ArgSpec and ir::ArgClass list the same classes in the same order");

std::vector<ir::ArgClass> to_arg_classes(const std::vector<ArgSpec> &specs) {
  std::vector<ir::ArgClass> out;
  out.reserve(specs.size());
  for (ArgSpec s : specs) out.push_back(ir::ArgClass(uint8_t(s)));
  return out;
}

std::string specialization_text(const std::vector<ir::ArgClass> &classes) {
  std::vector<ArgSpec> specs;
  specs.reserve(classes.size());
  for (ir::ArgClass c : classes) specs.push_back(ArgSpec(uint8_t(c)));
  return Specialization(std::move(specs)).str();
}

}  // namespace detail
}  // namespace kdsl
