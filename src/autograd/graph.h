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
