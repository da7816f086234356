// Internal: recording, checking and running Operations as graph nodes
// (src/autograd only). See docs/autograd.md.
#pragma once

#include <strideweave/autograd.h>

#include <map>
#include <memory>
#include <string>

#include "policy/operation_ids.h"
#include "storage/tensor_impl.h"

namespace strideweave::autograd {

using ImplPtr = std::shared_ptr<strideweave::detail::TensorImpl>;

// The positional Tensor arguments of one call, in argument order (what a
// recorded Operation saves, core-concepts 6.2).
using CallTensors = std::span<const Tensor* const>;

struct OperationAccess {
  // ---- recording (record.cpp)

  // Whether a call with these positional Tensor arguments saves them: grad
  // mode on and one of them differentiable (core-concepts 6.2).
  static bool saves_inputs(CallTensors inputs) noexcept;

  // Records a kernel-level call (a built-in on a class with kernels, a view,
  // a move) as `target` (or a fresh Operation when null) and attaches it to
  // `published` when saves_inputs(inputs) holds and `published` is
  // differentiable; otherwise does nothing. `kernel_operands` are the
  // operands exactly as the kernel received them (views of the inputs the
  // front end made, materialised scalars); `kernel_shape` is the kernel
  // result's shape when `published` squeezed axes away.
  static void record_kernel(std::string name, std::optional<OperationPlan> plan, Attributes attributes,
                            std::span<const KernelOperand> kernel_operands, const Tensor& published,
                            CallTensors inputs, const std::optional<Shape>& kernel_shape,
                            const std::shared_ptr<Operation>& target);

  // A view (the core view hook, or dispatch_op's view names): an Operation
  // with `source` as its one input, recorded as `target` (or a fresh one)
  // when grad mode is on and `source` is differentiable.
  static void record_view(const Tensor& source, const Tensor& view, strideweave::detail::ViewKind kind,
                          std::span<const std::int64_t> params, const std::shared_ptr<Operation>& target);

  // A definition call's node (record_definition.cpp): built after
  // publication validation and before publication (may throw; attaches
  // nothing), then attached after publication (cannot fail).
  static std::shared_ptr<Operation> make_definition(std::shared_ptr<const operation::ResolvedInvocation> invocation,
                                                    std::span<const Tensor> results,
                                                    const std::shared_ptr<Operation>& target);
  static void attach_definition(const std::shared_ptr<Operation>& node, std::span<const Tensor> results) noexcept;

  // Sets the dispatch metadata of `op` once (dispatch_op, or a recording
  // call for an Operation it made itself).
  static void set_metadata(Operation& op, std::string name, CarrierClass cls) noexcept {
    op.operation_name_ = std::move(name);
    op.dispatch_class_ = cls;
    op.dispatched_ = true;
  }
  static bool dispatched(const Operation& op) noexcept { return op.dispatched_; }

  // Marks the single use of forward(): RuntimeError on a second one.
  static void begin_forward(Operation& op);
  // The dispatch hook's computation (Operation::_forward is protected).
  static void run_forward(Operation& op, const DispatchedCall& call) { op._forward(call); }

  // ---- traversal (engine.cpp)

  static bool recorded(const Operation& op) noexcept { return op.kind_ != Operation::Kind::none; }
  static bool is_definition(const Operation& op) noexcept { return op.kind_ == Operation::Kind::definition; }
  static std::size_t result_count(const Operation& op) noexcept { return op.result_count_; }
  // The state that input i's gradient flows into, or null (a
  // non-differentiable input, or after release).
  static const ImplPtr* edge(const Operation& op, std::size_t i) noexcept;
  static std::size_t input_count(const Operation& op) noexcept { return op.inputs_.size(); }
  // Release (backward without retain_graph): saved data is dropped; the
  // node stays attached to its results.
  static void release(Operation& op) noexcept;
  // RuntimeError when released (naming retain_graph=True) or when a saved
  // carrier changed or was released; NotImplementedError without a VJP.
  static void check_ready(const Operation& op);
  // The call's backward without the checks (the caller ran check_ready):
  // one cotangent (or nullopt) per result; returns one entry per input.
  static std::vector<std::optional<Tensor>> apply(const Operation& op,
                                                  std::span<const std::optional<Tensor>> cotangents);

  // Which input each kernel operand was derived from, and the views in
  // between (nearest first): walks each tensor operand's chain of view
  // Operations back to one of `inputs` (matched by state identity, the j-th
  // tensor operand preferring the j-th input). An operand that reaches none
  // gets -1.
  static void map_operands_to_inputs(std::span<const KernelOperand> kernel_operands, CallTensors inputs,
                            std::vector<std::int32_t>& operand_input,
                            std::vector<std::vector<std::shared_ptr<Operation>>>& operand_views);

 private:
  static std::vector<std::optional<Tensor>> apply_kernel(const Operation& op, const Tensor& cotangent);
  static std::vector<std::optional<Tensor>> apply_definition(const Operation& op,
                                                             std::span<const std::optional<Tensor>> cotangents);
};

// The view hook's recording (record.cpp), installed by the bootstrap.
void install_view_hook() noexcept;

// The kernel-level backward shared by kernel nodes and by the built-in
// definitions' VJPs (builtins/definitions.cpp calls it through
// builtin_kernel_vjp): the VJP of `name` applied to `cotangent` (already of
// the kernel result's shape), then each kernel operand's gradient carried
// back through `operand_views` (nearest view first) to its input. Returns
// one entry per input (`input_count`); an input is skipped where
// `wanted[input]` is false.
std::vector<std::optional<Tensor>> kernel_backward(const VjpFn& vjp, const std::string& name,
                                                   const std::optional<OperationPlan>& plan,
                                                   const Attributes& attributes,
                                                   std::span<const KernelOperand> kernel_operands,
                                                   std::span<const std::int32_t> operand_input,
                                                   std::span<const std::vector<std::shared_ptr<Operation>>> operand_views,
                                                   const Tensor& kernel_output, const Tensor& cotangent,
                                                   std::size_t input_count, const std::vector<bool>& wanted);

// The VJP table (vjp_table.cpp) is filled by one function per family.
using VjpTable = std::map<std::string, VjpFn, std::less<>>;
// The VJP slot of the built-in operation `id` (operations.def): the families
// register against ids, so a misspelt or removed operation does not compile.
inline VjpFn& vjp_slot(VjpTable& table, policy::OperationId id) {
  return table[std::string(policy::operation_name(id))];
}
void add_arithmetic_vjps(VjpTable& table);   // vjps_arithmetic.cpp
void add_unary_vjps(VjpTable& table);        // vjps_unary.cpp
void add_reduction_vjps(VjpTable& table);    // vjps_reductions.cpp
void add_structured_vjps(VjpTable& table);   // vjps_structured.cpp
void add_view_vjps(VjpTable& table);         // vjps_views.cpp
void add_move_vjps(VjpTable& table);         // move.cpp

}  // namespace strideweave::autograd
