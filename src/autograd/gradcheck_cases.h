// Internal: the inputs of the finite-difference gradient check
// (gradcheck.cpp). One case builder per differentiable operation name
// (gradcheck_cases.cpp); the operations to check come from the registry, so
// a differentiable operation without a builder fails the check.
#pragma once

#include <strideweave/export.h>

#include <strideweave/call.h>
#include <strideweave/policy.h>

#include <functional>
#include <map>
#include <random>
#include <string>
#include <variant>
#include <vector>

namespace strideweave::autograd::gradcheck {

// A tensor operand described on the host: values in logical order.
struct HostTensor {
  std::vector<std::int64_t> extents;
  const SimpleDType* dtype;
  std::vector<double> values;  // Float32 values are exact binary32; Int32 integers; Bool 0/1
};
using HostOperand = std::variant<HostTensor, WeakScalar>;

struct Case {
  std::string label;
  std::vector<HostOperand> operands;  // in the plan's operand order
  CallOptions options;
};

// The cases of one plan (the plan fixes roles and dtypes).
using CaseBuilder = std::function<std::vector<Case>(const OperationPlan& plan, std::mt19937& rng)>;
STRIDEWEAVE_TEST_API const std::map<std::string, CaseBuilder, std::less<>>& case_builders();

}  // namespace strideweave::autograd::gradcheck
