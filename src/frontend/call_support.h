// Internal: building CallableOperation entries (call.h) for the typed
// front-end functions. Each family file adds its entries through one
// function; src/frontend/calls.cpp holds the central list of families.
#pragma once

#include <strideweave/call.h>
#include <strideweave/errors.h>
#include <strideweave/ops.h>

#include <fmt/format.h>

#include <set>
#include <string>

namespace strideweave::frontend {

void add_arithmetic_calls(std::vector<CallableOperation>& out);   // arithmetic.cpp
void add_unary_calls(std::vector<CallableOperation>& out);        // unary.cpp
void add_reduction_calls(std::vector<CallableOperation>& out);    // reductions.cpp
void add_structured_calls(std::vector<CallableOperation>& out);   // structured.cpp

// Reads named options once each; finish() rejects the unread ones.
class OptionReader {
 public:
  OptionReader(std::string_view operation, const CallOptions& options) : op_(operation), options_(options) {}

  bool has(const std::string& name) {
    seen_.insert(name);
    auto it = options_.find(name);
    return it != options_.end() && !std::holds_alternative<std::monostate>(it->second);
  }
  bool boolean(const std::string& name, bool fallback) {
    if (!has(name)) return fallback;
    if (const bool* b = std::get_if<bool>(&options_.find(name)->second)) return *b;
    throw TypeError(fmt::format("{}: option '{}' must be a bool", op_, name));
  }
  std::int64_t integer(const std::string& name, std::int64_t fallback) {
    if (!has(name)) return fallback;
    if (const std::int64_t* i = std::get_if<std::int64_t>(&options_.find(name)->second)) return *i;
    throw TypeError(fmt::format("{}: option '{}' must be an integer", op_, name));
  }
  std::optional<std::int64_t> optional_integer(const std::string& name) {
    if (!has(name)) return std::nullopt;
    return integer(name, 0);
  }
  double real(const std::string& name, double fallback) {
    if (!has(name)) return fallback;
    const OptionValue& v = options_.find(name)->second;
    if (const double* d = std::get_if<double>(&v)) return *d;
    if (const std::int64_t* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
    throw TypeError(fmt::format("{}: option '{}' must be a real number", op_, name));
  }
  // A list of integers (a single integer is accepted as a one-element list).
  std::optional<std::vector<std::int64_t>> integers(const std::string& name) {
    if (!has(name)) return std::nullopt;
    const OptionValue& v = options_.find(name)->second;
    if (const auto* l = std::get_if<std::vector<std::int64_t>>(&v)) return *l;
    if (const std::int64_t* i = std::get_if<std::int64_t>(&v)) return std::vector<std::int64_t>{*i};
    throw TypeError(fmt::format("{}: option '{}' must be a list of integers", op_, name));
  }
  void finish() const {
    for (const auto& [name, value] : options_)
      if (!seen_.count(name)) throw TypeError(fmt::format("{}: unknown option '{}'", op_, name));
  }

 private:
  std::string op_;
  const CallOptions& options_;
  std::set<std::string> seen_;
};

// Operand accessors with the TypeError a binding would raise.
inline const Tensor& tensor_arg(std::string_view op, std::span<const CallOperand> operands, std::size_t i) {
  if (i >= operands.size()) throw TypeError(fmt::format("{}: missing operand {}", op, i));
  if (const Tensor* t = std::get_if<Tensor>(&operands[i])) return *t;
  throw TypeError(fmt::format("{}: operand {} must be a tensor", op, i));
}
inline void expect_arity(std::string_view op, std::span<const CallOperand> operands, std::size_t n) {
  if (operands.size() != n)
    throw TypeError(fmt::format("{}: takes {} operand(s), got {}", op, n, operands.size()));
}
// The PlanOperand of a call operand (for reporting the resolved plan).
inline PlanOperand plan_operand(const CallOperand& o) {
  if (const Tensor* t = std::get_if<Tensor>(&o)) return PlanOperand(t->dtype());
  return PlanOperand(std::get<WeakScalar>(o));
}
inline std::vector<PlanOperand> plan_operands(std::span<const CallOperand> operands) {
  std::vector<PlanOperand> out;
  for (const CallOperand& o : operands) out.push_back(plan_operand(o));
  return out;
}
// A call with no execution options: an accumulator or arithmetic is a
// TypeError.
inline void no_accumulator(std::string_view op, const ExecutionRequest& execution) {
  (void)execution.options(op);  // raises the policy's TypeError unless empty
}
// A call with several results: a caller-provided output is a TypeError.
inline void no_output(std::string_view op, const ExecutionRequest& execution) {
  if (execution.out)
    throw TypeError(fmt::format("{}: has two results and takes no caller-provided output", op));
}

}  // namespace strideweave::frontend
