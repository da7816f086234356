// strideweave/call.h — calling any public operation by name.
//
// The typed front-end functions (ops.h) are the C++ API. This header exposes
// the same operations through one uniform, name-based entry point for tools,
// the command line (`strideweave run`) and the later Python binding:
// operands are tensors or weak scalars in positional order, options are named
// values. Each operation documents its options (name, default, meaning);
// an unknown option or one of the wrong kind is a TypeError, a bad value the
// typed function's error (usually ValueError).
#pragma once

#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <strideweave/policy.h>
#include <strideweave/tensor.h>

namespace strideweave {

// null, bool, integer, real, list of integers.
using OptionValue = std::variant<std::monostate, bool, std::int64_t, double, std::vector<std::int64_t>>;
using CallOptions = std::map<std::string, OptionValue, std::less<>>;
using CallOperand = std::variant<Tensor, WeakScalar>;

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
  bool accepts_accumulator = false;  // reduce_sum and matmul
  // An internal plan of a public operation (sort's and topk's value and
  // index plans), callable by name so the conformance harness can run every
  // kernel-table plan; not listed as a public operation.
  bool internal = false;
  std::function<CallResult(std::span<const CallOperand>, const CallOptions&, const DType* accumulator)> call;
};

// Every public operation, then the internal plan entries, sorted by name.
const std::vector<CallableOperation>& callable_operations();
// The entry of `name`, or nullptr.
const CallableOperation* find_callable(std::string_view name);
// Calls `name`. Unknown name -> NotImplementedError; an accumulator for an
// operation without execution options -> TypeError (as the policy says).
CallResult call_operation(std::string_view name, std::span<const CallOperand> operands, const CallOptions& options = {},
                          const DType* accumulator = nullptr);

}  // namespace strideweave
