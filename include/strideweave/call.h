// strideweave/call.h — calling any public operation by name.
//
// The typed front-end functions (ops.h) are the C++ API. This header exposes
// the same operations through one uniform, name-based entry point for tools,
// the command line (`strideweave run`) and the later Python binding:
// operands are tensors or weak scalars in positional order, options are named
// values. Each operation documents its options (name, default, meaning);
// an unknown option or one of the wrong kind is a TypeError, a bad value the
// typed function's error (usually ValueError); an explicit None means the
// option's default. The calls bind through the operation's definition
// (strideweave::operation::get_definition), whose schema is the one home of
// the operands, the options and their defaults.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <strideweave/execution.h>
#include <strideweave/operation.h>
#include <strideweave/output.h>
#include <strideweave/policy.h>
#include <strideweave/tensor.h>
#include <strideweave/export.h>

STRIDEWEAVE_PUBLIC_BEGIN

namespace strideweave {

// An option value (operation.h): None, bool, integer, real, list of
// integers, text, a DType. The by-name calls bind through the operation's
// definition (strideweave::operation), so both spell options alike.
using OptionValue = operation::OptionValue;
using CallOptions = operation::OptionMap;
using CallOperand = std::variant<Tensor, WeakScalar>;

// The execution options a by-name call asks for (policy R10, plus the
// explicit arithmetic beyond the specification). Implicitly built from an
// accumulator dtype pointer, so `call_operation(name, ops, options, &F64)`
// reads as before. options(op) validates and binds them to `op` exactly as
// OperationExecutionOptions does (its errors), or returns nullopt when
// nothing was asked.
struct ExecutionRequest {
  const DType* accumulator = nullptr;
  std::optional<Arithmetic> arithmetic;
  // A caller-provided output for the call (ops.h, "Caller-provided
  // outputs"); an operation with several results (sort, topk) refuses one
  // with TypeError.
  Output out;

  ExecutionRequest() = default;
  ExecutionRequest(const DType* accumulator_dtype) : accumulator(accumulator_dtype) {}  // NOLINT: implicit on purpose
  ExecutionRequest(const DType* accumulator_dtype, std::optional<Arithmetic> arithmetic_)
      : accumulator(accumulator_dtype), arithmetic(arithmetic_) {}
  // No accumulator and no arithmetic requested (the output is not an
  // execution option of the plan).
  bool empty() const noexcept { return accumulator == nullptr && !arithmetic; }
  std::optional<OperationExecutionOptions> options(std::string_view operation) const {
    if (empty()) return std::nullopt;
    return OperationExecutionOptions(std::string(operation), accumulator, arithmetic);
  }
};

struct CallResult {
  std::vector<OperationPlan> plans;  // the plan(s) the call resolved, in order
  std::vector<Tensor> results;       // one or several results
};

struct OptionDoc {
  std::string name;
  std::string default_value;  // "required" when there is none
  std::string meaning;
};

struct CallableOperation {
  std::string name;
  std::string signature;  // e.g. "add(a: tensor, b: tensor)"
  std::vector<OptionDoc> options;
  bool accepts_accumulator = false;  // the schema has accumulator_dtype (reduce_sum, matmul)
  bool accepts_arithmetic = false;   // the definition may contract (matmul's binary32_fused)
  // An internal plan of a public operation (sort's and topk's value and
  // index plans), callable by name so the conformance harness can run every
  // kernel-table plan; not listed as a public operation.
  bool internal = false;
  std::function<CallResult(std::span<const CallOperand>, const CallOptions&, const ExecutionRequest&)> call;
};

// The request that selects `plan`'s execution choices when its operands
// resolve to the default: the accumulator dtype of a FLOATING plan, and the
// arithmetic of a contracted plan.
inline ExecutionRequest execution_request_of(const OperationPlan& plan) {
  ExecutionRequest r;
  if (plan.accumulation() == Accumulation::FLOATING) r.accumulator = plan.accumulator_dtype();
  if (plan.compute() == Arithmetic::BINARY32_FUSED) r.arithmetic = plan.compute();
  return r;
}

// resolve_operation_plan with a request's options (its errors).
inline OperationPlan resolve_for_request(std::string_view operation, std::span<const PlanOperand> operands,
                                         const ExecutionRequest& request) {
  const std::optional<OperationExecutionOptions> options = request.options(operation);
  return resolve_operation_plan(operation, operands, nullptr, options ? &*options : nullptr);
}

// Every public operation, then the internal plan entries, sorted by name.
const std::vector<CallableOperation>& callable_operations();
// The entry of `name`, or nullptr.
const CallableOperation* find_callable(std::string_view name);
// Calls `name`. Unknown name -> NotImplementedError; an accumulator or
// arithmetic for an operation without execution options -> TypeError (as the
// policy says).
CallResult call_operation(std::string_view name, std::span<const CallOperand> operands, const CallOptions& options = {},
                          const ExecutionRequest& execution = {});

// A composite's lowering (carrier-composition A14; docs/evictable.md): the
// built-in call `call` that a composite's dispatch hook received
// (Operation::_forward), run again with `operands` in place of
// call.operands — the same shapes and dtypes on the composite's tier (a
// view of the tier at the composite operand's offset and layout), scalars
// unchanged. It takes the one path of every call on the tier's exact class:
// the capability gate for call.plan, then the class's executor (its kernel,
// its dispatch hook, ...) with call.attributes, and returns the fresh result,
// of call.output()'s shape in the canonical compact layout, on that class.
// Nothing is recorded (the composite's Operation is the call's node).
// Checks, before any allocation: a user-defined call (call.invocation set:
// it lowers through its definition) -> TypeError; not exactly one output,
// or another operand count -> ValueError; an operand of another kind, or a
// tensor of another dtype -> TypeError; of another shape -> ValueError;
// tensors on two exact classes or placements -> TypeError; no tensor ->
// ValueError; a released tier -> RuntimeError; a plan the tier's class does
// not execute -> UnsupportedOperationPlan. A definition-backed tier is
// reached through its definition only: NotImplementedError.
// `tier_operation`: the tier's own Operation for this call (its
// dispatch_op(call.operation), which a composite's adapter owns); a tier
// class that computes through its dispatch hook runs that Operation instead
// of asking the hook for another (kernel classes ignore it).
Tensor execute_lowered(const DispatchedCall& call, std::span<const KernelOperand> operands,
                       const std::shared_ptr<Operation>& tier_operation = nullptr);

// A built-in operation's call as the shipped kernels receive it (beyond the
// specification; docs/extension.md, "Built-in operations in a kernel
// pattern"): the typed function's own lowering of invocation.call(), up to
// the kernel. A kernel pattern for a built-in definition (the CUDA
// carrier's, a pack's) computes exactly what a Generic kernel computes from
// the same KernelCall fields, so no accelerator repeats the front end's
// broadcasting, scalar materialisation or option normalisation:
//   plan       the kernel's plan: invocation.plan(), except mul(weak,
//              tensor), whose kernel runs the registry's (tensor,
//              weak_scalar) plan with `operands` in that order
//              (docs/policy.md);
//   operands   in plan order: tensors as views of the result's grid
//              (broadcast, or aligned for matmul: (..., M, K) x (..., K, N)),
//              weak scalars materialised to their plan's convert_to dtype;
//   attributes the normalised options as Generic's kernels read them
//              (docs/operations/*.md: "axes" sorted and non-negative,
//              "keepdims", "axis", "k", "descending", "largest", conv's
//              "stride", "padding_lo", "dilation", "groups", the
//              activations' parameters);
//   kernel_shape  the kernel result's shape, filled compact in logical
//              order;
//   squeeze    the axes of it that the published result drops (matmul's
//              vector promotion, rank-0 results): the published shape is
//              invocation.results()[0].shape(), the same elements in the
//              same order.
// TypeError for a definition that is not built-in, and for sort and topk
// themselves (their two plans, _sort_values / _sort_indices and
// _topk_values / _topk_indices, are the built-in definitions a pattern
// serves). The lowering's own errors are the typed call's.
struct BuiltinKernelCall {
  OperationPlan plan;
  std::vector<KernelOperand> operands;
  Attributes attributes;
  Shape kernel_shape;
  std::vector<std::int64_t> squeeze;
};
BuiltinKernelCall lower_builtin(const operation::ResolvedInvocation& invocation);

}  // namespace strideweave

STRIDEWEAVE_PUBLIC_END
