// The central list of callable operation families (call.h).
#include <algorithm>

#include "frontend/call_support.h"

namespace strideweave {

const std::vector<CallableOperation>& callable_operations() {
  static const std::vector<CallableOperation> table = [] {
    std::vector<CallableOperation> out;
    frontend::add_arithmetic_calls(out);
    frontend::add_unary_calls(out);
    frontend::add_reduction_calls(out);
    frontend::add_structured_calls(out);
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return out;
  }();
  return table;
}

const CallableOperation* find_callable(std::string_view name) {
  for (const CallableOperation& c : callable_operations())
    if (c.name == name) return &c;
  return nullptr;
}

CallResult call_operation(std::string_view name, std::span<const CallOperand> operands, const CallOptions& options,
                          const ExecutionRequest& execution) {
  const CallableOperation* c = find_callable(name);
  if (!c) throw NotImplementedError(fmt::format("call_operation: no public operation named '{}'", name));
  return c->call(operands, options, execution);
}

}  // namespace strideweave
