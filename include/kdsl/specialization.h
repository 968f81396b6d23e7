// specialization.h - what kdsl specializes a kernel on, per argument ("16,1,_"): one type, parsed and formatted in one place
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <kdsl/detail/trace.h>

namespace kdsl {

struct ArgValue;

// What a launch proves about one argument, as Triton does, and compiles into the kernel:
// written "16", "1" and "_" (the log's "[16,16,_,1]", kdsl-compile's --spec).
enum class ArgSpec : uint8_t {
  None,         // "_": nothing known (every float is this)
  Divisible16,  // "16": an integer divisible by 16, or a pointer aligned to 16 bytes: vector loads
  EqualToOne,   // "1": an integer equal to 1, folded to a constant (never a pointer)
};

// The specialization a kernel is compiled for: one ArgSpec per argument, or a rule that gives
// them for any kernel ("aligned", "none"). Typed: Specialization{ArgSpec::Divisible16,
// ArgSpec::None}; as text: Specialization("16,_"). The default is aligned().
class Specialization {
 public:
  Specialization() = default;
  Specialization(std::initializer_list<ArgSpec> classes) : Specialization(std::vector<ArgSpec>(classes)) {}
  explicit Specialization(std::vector<ArgSpec> classes) : rule_(Rule::PerArgument), classes_(std::move(classes)) {}
  // The text forms parse() reads.
  Specialization(const char *text) : Specialization(parse(text)) {}
  Specialization(const std::string &text) : Specialization(parse(text)) {}

  // Every pointer aligned to 16 bytes and every integer divisible by 16 (floats: nothing known):
  // what a launch with aligned buffers and sizes gets.
  static Specialization aligned() { return Specialization(); }
  // Nothing known of any argument: the code every launch of the kernel can run.
  static Specialization none();

  // "aligned", "none", or one entry per argument separated by commas, each "16", "1" or "_"
  // ("16,16,_,1"; spaces and the log's surrounding brackets, "[16,_]", are accepted; "" is a
  // kernel without arguments). Throws kdsl::Error naming the entry that is none of these.
  static Specialization parse(std::string_view text);
  // The text parse() reads back: "16,1,_", "aligned" or "none".
  std::string str() const;

  // One ArgSpec per parameter of a kernel with these parameter types, as a launch would
  // classify its arguments. Throws kdsl::Error naming the kernel when an explicit list has
  // another length, or gives an argument a class no launch can (a pointer "1", a float "16").
  std::vector<ArgSpec> classes_for(const std::vector<detail::TypeDesc> &params, std::string_view kernel_name) const;

  bool is_per_argument() const { return rule_ == Rule::PerArgument; }
  // The explicit list (empty for the rules).
  const std::vector<ArgSpec> &classes() const { return classes_; }

  bool operator==(const Specialization &) const = default;

 private:
  enum class Rule : uint8_t { Aligned, NoneKnown, PerArgument };
  Rule rule_ = Rule::Aligned;
  std::vector<ArgSpec> classes_;
};

// The class a launch gives `arg` passed for a parameter of type `param` (an argument the
// launch accepts): a pointer aligned to 16 bytes or an integer divisible by 16 is Divisible16,
// an integer equal to 1 EqualToOne, anything else (floats, Dynamic<T> scalars) None. The one
// rule launches and recorded kernel plans (kernels/launch_recorder.h) classify by.
ArgSpec launch_arg_spec(const detail::TypeDesc &param, const ArgValue &arg);

}  // namespace kdsl
