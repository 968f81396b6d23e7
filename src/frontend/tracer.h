// tracer.h - turns one run of a kernel's C++ body into a block-IR function
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <kdsl/detail/trace.h>

#include "ir/ir.h"

namespace kdsl::frontend {

ir::Type to_ir_type(const detail::TypeDesc &t);

// While a Tracer is alive on a thread, block operations on that thread record into it.
// Tracers do not nest.
class Tracer {
 public:
  Tracer(std::string kernel_name, const std::vector<detail::TypeDesc> &params, const std::vector<ir::ArgClass> &classes);
  ~Tracer();
  Tracer(const Tracer &) = delete;
  Tracer &operator=(const Tracer &) = delete;

  const std::vector<int32_t> &argument_values() const { return arg_values_; }
  // Whether device_assert records its check; from KDSL_ASSERT at construction (on unless "0").
  bool asserts_enabled() const { return asserts_; }
  void set_asserts_enabled(bool on) { asserts_ = on; }
  // Ends the trace and hands over the function (checked by the verifier).
  ir::Function finish();

  // Called through kdsl/detail/trace.h.
  static Tracer &current();
  ir::Function &function() { return fn_; }
  ir::Region &region() { return *regions_.back(); }
  void push(ir::Region *r) { regions_.push_back(r); }
  void pop() { regions_.pop_back(); }
  ir::Op *open_op(size_t depth) { return open_ops_.at(depth); }
  std::vector<ir::Op *> &open_ops() { return open_ops_; }
  // expect_extent(pointer, count) calls, as (pointer value, count value) pairs, in order.
  const std::vector<std::pair<int32_t, int32_t>> &extent_requirements() const { return extent_requirements_; }
  void add_extent_requirement(int32_t pointer, int32_t count) { extent_requirements_.push_back({pointer, count}); }

 private:
  ir::Function fn_;
  std::vector<ir::Region *> regions_;
  std::vector<ir::Op *> open_ops_;  // the for / if ops whose regions are being filled
  std::vector<int32_t> arg_values_;
  std::vector<std::pair<int32_t, int32_t>> extent_requirements_;
  Tracer *previous_ = nullptr;
  bool asserts_ = true;
};

// Traces one kernel: runs `body` (its trace function, given the argument values) under a fresh
// Tracer and returns the verified IR. A kdsl::Error raised while tracing (a bad grid axis, an
// operation the verifier refuses) comes out with the kernel's name in front. `extent_requirements`,
// when given, receives the expect_extent declarations (pointer, count) the body made.
ir::Function trace_kernel(const std::string &kernel_name, const std::vector<detail::TypeDesc> &params,
                          const std::vector<ir::ArgClass> &classes, void (*body)(const std::vector<int32_t> &arg_ids),
                          std::vector<std::pair<int32_t, int32_t>> *extent_requirements = nullptr);

// KDSL_ASSERT=0 compiles device_assert out of kernels traced from then on; anything else
// (or unset) keeps them. Read at each trace, so a test or tool may change it in between.
bool device_asserts_from_env();

}  // namespace kdsl::frontend
