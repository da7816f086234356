// The one VJP table, keyed by operation name (or view kind), filled by one
// function per family; and the registry-derived list of differentiable
// operations it must cover.
#include <algorithm>
#include <set>
#include <string_view>
#include <unordered_map>

#include "autograd/graph.h"

namespace strideweave::autograd {
namespace {

const VjpTable& table() {
  static const VjpTable t = [] {
    VjpTable out;
    add_arithmetic_vjps(out);
    add_unary_vjps(out);
    add_reduction_vjps(out);
    add_structured_vjps(out);
    add_view_vjps(out);
    add_move_vjps(out);
    return out;
  }();
  return t;
}

// A plan is differentiable when it outputs exactly Float32 and has a Float32
// tensor operand (core-concepts.md 6.1-6.2: both a positional input and the
// result can be differentiable).
bool differentiable(const OperationPlan& plan) {
  if (!plan.output_differentiable()) return false;
  return std::any_of(plan.operands().begin(), plan.operands().end(), [](const OperandPlan& o) {
    return o.role() == OperandRole::TENSOR && o.dtype() == &DType::Float32();
  });
}

}  // namespace

const VjpFn* find_vjp(std::string_view operation) {
  // Every recorded call looks its VJP up: a hash of the name, not the
  // ordered map's string comparisons (keys view the table's own strings).
  static const std::unordered_map<std::string_view, const VjpFn*> index = [] {
    std::unordered_map<std::string_view, const VjpFn*> out;
    for (const auto& [name, fn] : table()) out.emplace(name, &fn);
    return out;
  }();
  // A loop records one operation over and over: the last name this thread
  // found (a view of the table's own key) answers first.
  thread_local std::string_view last_name;
  thread_local const VjpFn* last_vjp = nullptr;
  if (last_vjp && last_name == operation) return last_vjp;
  const auto it = index.find(operation);
  if (it == index.end()) return nullptr;
  last_name = it->first;
  last_vjp = it->second;
  return last_vjp;
}

std::vector<std::string> operations_with_vjp() {
  std::vector<std::string> out;
  for (const auto& [name, fn] : table()) out.push_back(name);
  return out;
}

std::vector<OperationPlan> differentiable_plans() {
  std::vector<OperationPlan> out;
  for (const OperationPlan& p : executable_plan_set())
    if (differentiable(p)) out.push_back(p);
  return out;
}

std::vector<std::string> differentiable_operations() {
  std::set<std::string> names;
  for (const OperationPlan& p : differentiable_plans()) names.insert(p.operation());
  return {names.begin(), names.end()};
}

}  // namespace strideweave::autograd
