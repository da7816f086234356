// Internal: building and traversing graph nodes (src/autograd only).
#pragma once

#include <strideweave/autograd.h>

#include <map>
#include <memory>
#include <string>

#include "storage/tensor_impl.h"

namespace strideweave::autograd {

using ImplPtr = std::shared_ptr<strideweave::detail::TensorImpl>;

struct NodeAccess {
  // A node for one call: `operands` exactly as executed (tensors are saved
  // detached, an operand that requires grad becomes an edge); `output` is
  // the published result. `check_versions`: every distinct carrier of the
  // operands and the result is saved with its version (operations); views
  // read no values and save none.
  static std::shared_ptr<Node> make(std::string name, std::optional<OperationPlan> plan, Attributes attributes,
                                    std::span<const KernelOperand> operands, const Tensor& output,
                                    bool check_versions);
  static const std::vector<ImplPtr>& edges(const Node& node) noexcept { return node.edges_; }
  // Release (backward without retain_graph): saved data is dropped.
  static void release(Node& node) noexcept;
  // RuntimeError when released (naming retain_graph=True) or when a saved
  // carrier changed or was released; NotImplementedError without a VJP.
  static void check_ready(const Node& node);
  // The VJP, without the checks (the caller ran check_ready).
  static std::vector<std::optional<Tensor>> apply(const Node& node, const Tensor& cotangent);

  // ---- definition nodes (record_definition.cpp)
  static bool is_definition(const Node& node) noexcept { return node.definition_; }
  // A node for a validated, not yet published definition call: the
  // invocation, every result (detached), the declared saved operands
  // (detached), an edge per schema operand that is differentiable and
  // requires grad, and the carriers whose versions attach() snapshots.
  // Nothing is attached; may throw.
  static std::shared_ptr<Node> make_definition(std::shared_ptr<const operation::ResolvedInvocation> invocation,
                                               std::span<const Tensor> results);
  // After publication: snapshots the saved carriers' versions and makes the
  // node the grad_fn of every Float32 result. Cannot fail.
  static void attach_definition(const std::shared_ptr<Node>& node, std::span<const Tensor> results) noexcept;
  // The definition's VJP with one cotangent (or nullopt) per result;
  // validates what it returns (count ValueError, dtype and carrier class
  // TypeError, shape ValueError) and returns one entry per schema operand
  // (nullopt where no gradient is wanted). The caller ran check_ready.
  static std::vector<std::optional<Tensor>> apply_definition(const Node& node,
                                                             std::span<const std::optional<Tensor>> cotangents);
  // The number of results of a definition node (1 for other nodes).
  static std::size_t result_count(const Node& node) noexcept {
    return node.definition_ ? node.result_count_ : 1;
  }
};

// Installs the core view hook (idempotent).
void install_view_hook() noexcept;

// The VJP table (vjp_table.cpp) is filled by one function per family.
using VjpTable = std::map<std::string, VjpFn, std::less<>>;
void add_arithmetic_vjps(VjpTable& table);   // vjps_arithmetic.cpp
void add_unary_vjps(VjpTable& table);        // vjps_unary.cpp
void add_reduction_vjps(VjpTable& table);    // vjps_reductions.cpp
void add_structured_vjps(VjpTable& table);   // vjps_structured.cpp
void add_view_vjps(VjpTable& table);         // vjps_views.cpp
void add_move_vjps(VjpTable& table);         // move.cpp

}  // namespace strideweave::autograd
