// tracer.cpp - records block operations into the IR while a kernel body runs
#include "frontend/tracer.h"

#include <fmt/format.h>

#include <cstdlib>

#include <kdsl/block.h>
#include <kdsl/error.h>
#include <kdsl/reduce.h>

#include "ir/verifier.h"

namespace kdsl::frontend {

static_assert(ir::kDotTf32 == int64_t(DotPrecision::TF32), "the IR spells a TF32 dot as DotPrecision::TF32's value");

namespace {
thread_local Tracer *current_tracer = nullptr;
}

ir::Type to_ir_type(const detail::TypeDesc &t) {
  ir::Type out;
  out.elem = t.elem;
  out.is_ptr = t.is_ptr;
  out.shape.rank = t.rank;
  for (int i = 0; i < t.rank; ++i) out.shape.dims[i] = t.dims[i];
  return out;
}

bool device_asserts_from_env() {
  const char *v = std::getenv("KDSL_ASSERT");
  return !(v && std::string(v) == "0");
}

Tracer::Tracer(std::string kernel_name, const std::vector<detail::TypeDesc> &params, const std::vector<ir::ArgClass> &classes)
    : asserts_(device_asserts_from_env()) {
  if (current_tracer) throw Error(fmt::format("kernel '{}' was traced while tracing kernel '{}': kernels cannot launch kernels", kernel_name, current_tracer->fn_.name));
  fn_.name = std::move(kernel_name);
  for (size_t i = 0; i < params.size(); ++i) {
    ir::Argument a;
    a.name = fmt::format("arg{}", i);
    a.value = fn_.new_value(to_ir_type(params[i]));
    a.spec = i < classes.size() ? classes[i] : ir::ArgClass::None;
    fn_.args.push_back(a);
    arg_values_.push_back(a.value);
  }
  regions_.push_back(&fn_.body);
  previous_ = current_tracer;
  current_tracer = this;
}

Tracer::~Tracer() { current_tracer = previous_; }

Tracer &Tracer::current() {
  if (!current_tracer) throw Error("kdsl block operations can only run inside a kernel being traced (use kdsl::compile and launch it)");
  return *current_tracer;
}

ir::Function Tracer::finish() {
  if (regions_.size() != 1) internal_error("trace finished inside an open for_range or if_ region");
  current_tracer = previous_;
  previous_ = nullptr;
  ir::verify_or_throw(fn_);
  return std::move(fn_);
}

ir::Function trace_kernel(const std::string &kernel_name, const std::vector<detail::TypeDesc> &params,
                          const std::vector<ir::ArgClass> &classes, void (*body)(const std::vector<int32_t> &arg_ids),
                          std::vector<std::pair<int32_t, int32_t>> *extent_requirements) {
  try {
    Tracer tracer(kernel_name, params, classes);
    body(tracer.argument_values());
    ir::Function fn = tracer.finish();
    if (extent_requirements) *extent_requirements = tracer.extent_requirements();
    return fn;
  } catch (const Error &e) {
    std::string_view what = e.what();
    std::string prefix = fmt::format("kernel '{}'", kernel_name);
    if (what.find(prefix) != std::string_view::npos) throw;  // already names it
    throw Error(fmt::format("{}: {}", prefix, what));
  }
}

}  // namespace kdsl::frontend

namespace kdsl::detail {
using frontend::Tracer;

int32_t emit(OpKind kind, const std::vector<int32_t> &operands, const TypeDesc &result, const std::vector<int64_t> &ints, double fval) {
  Tracer &t = Tracer::current();
  ir::Type type = frontend::to_ir_type(result);
  // Shapes are compile-time and Block's static_assert bounds them; this catches any built otherwise.
  if (type.shape.numel() > kMaxBlockElements)
    throw Error(fmt::format("kernel '{}': {} makes a block of shape {} ({} elements), more than the limit of 2^20 (1048576)",
                            t.function().name, ir::op_name(kind), type.shape.str(), type.shape.numel()));
  ir::Op op;
  op.kind = kind;
  op.operands = operands;
  op.ints = ints;
  op.fval = fval;
  ir::ValueId r = t.function().new_value(type);
  op.results.push_back(r);
  t.region().ops.push_back(std::move(op));
  return r;
}

int32_t emit(OpKind kind, std::initializer_list<int32_t> operands, const TypeDesc &result, std::initializer_list<int64_t> ints, double fval) {
  return emit(kind, std::vector<int32_t>(operands), result, std::vector<int64_t>(ints), fval);
}

void emit_effect(OpKind kind, std::initializer_list<int32_t> operands) {
  ir::Op op;
  op.kind = kind;
  op.operands = operands;
  Tracer::current().region().ops.push_back(std::move(op));
}

void require_extent(int32_t pointer, int32_t count) { Tracer::current().add_extent_requirement(pointer, count); }

void emit_effect(OpKind kind, const std::vector<int32_t> &operands, const std::vector<int64_t> &ints, std::string text) {
  Tracer &t = Tracer::current();
  if (kind == OpKind::DeviceAssert && !t.asserts_enabled()) return;
  ir::Op op;
  op.kind = kind;
  op.operands = operands;
  op.ints = ints;
  op.text = std::move(text);
  t.region().ops.push_back(std::move(op));
}

std::vector<int32_t> begin_for(int32_t lo, int32_t hi, int32_t step, const std::vector<int32_t> &inits) {
  Tracer &t = Tracer::current();
  ir::Op op;
  op.kind = OpKind::For;
  op.operands = {lo, hi, step};
  op.operands.insert(op.operands.end(), inits.begin(), inits.end());
  op.regions.resize(1);
  ir::Region &body = op.regions[0];
  body.args.push_back(t.function().new_value(t.function().type(lo)));
  for (int32_t v : inits) body.args.push_back(t.function().new_value(t.function().type(v)));
  t.region().ops.push_back(std::move(op));
  ir::Op *placed = &t.region().ops.back();
  t.open_ops().push_back(placed);
  t.push(&placed->regions[0]);
  return placed->regions[0].args;
}

std::vector<int32_t> end_for(const std::vector<int32_t> &yields) {
  Tracer &t = Tracer::current();
  if (t.open_ops().empty() || t.open_ops().back()->kind != OpKind::For) internal_error("end_for without an open for_range");
  ir::Op yield;
  yield.kind = OpKind::Yield;
  yield.operands = yields;
  t.region().ops.push_back(std::move(yield));
  t.pop();
  ir::Op *loop = t.open_ops().back();
  t.open_ops().pop_back();
  for (size_t i = 3; i < loop->operands.size(); ++i) loop->results.push_back(t.function().new_value(t.function().type(loop->operands[i])));
  return loop->results;
}

void begin_if(int32_t cond) {
  Tracer &t = Tracer::current();
  ir::Op op;
  op.kind = OpKind::If;
  op.operands = {cond};
  op.regions.resize(2);
  t.region().ops.push_back(std::move(op));
  ir::Op *placed = &t.region().ops.back();
  t.open_ops().push_back(placed);
  t.push(&placed->regions[0]);
}

void begin_else(const std::vector<int32_t> &then_yields) {
  Tracer &t = Tracer::current();
  ir::Op yield;
  yield.kind = OpKind::Yield;
  yield.operands = then_yields;
  t.region().ops.push_back(std::move(yield));
  t.pop();
  t.push(&t.open_ops().back()->regions[1]);
}

std::vector<int32_t> end_if(const std::vector<int32_t> &else_yields) {
  Tracer &t = Tracer::current();
  ir::Op yield;
  yield.kind = OpKind::Yield;
  yield.operands = else_yields;
  t.region().ops.push_back(std::move(yield));
  t.pop();
  ir::Op *branch = t.open_ops().back();
  t.open_ops().pop_back();
  for (int32_t v : else_yields) branch->results.push_back(t.function().new_value(t.function().type(v)));
  return branch->results;
}

}  // namespace kdsl::detail

namespace kdsl {

Block<i32> program_id(int axis) {
  if (axis < 0 || axis > 2) throw Error(fmt::format("program_id({}): the grid has axes 0, 1 and 2", axis));
  return detail::make<Block<i32>>(detail::emit(OpKind::ProgramId, {}, Block<i32>::type(), {axis}));
}

Block<i32> num_programs(int axis) {
  if (axis < 0 || axis > 2) throw Error(fmt::format("num_programs({}): the grid has axes 0, 1 and 2", axis));
  return detail::make<Block<i32>>(detail::emit(OpKind::NumPrograms, {}, Block<i32>::type(), {axis}));
}

}  // namespace kdsl
