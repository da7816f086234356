// Shared helpers of the operation-dtype-policy tests
// (test_operation_dtype_policy*.cpp). Test suites are named after the
// requirement of /work/shared/spec/operation-dtype-policy.md they check:
// OperationDtypePolicy_R<n>, and OperationDtypePolicy_Table for the complete
// table of registered operations.
#pragma once

#include <strideweave/dtype.h>
#include <strideweave/errors.h>
#include <strideweave/policy.h>

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace policy_test {

namespace sw = strideweave;

inline const sw::SimpleDType& F32() { return sw::DType::Float32(); }
inline const sw::SimpleDType& I32() { return sw::DType::Int32(); }
inline const sw::SimpleDType& BOOL() { return sw::DType::Bool(); }
inline const sw::SimpleDType& F64() { return sw::DType::Float64(); }

inline constexpr std::int64_t kTwo31 = std::int64_t{1} << 31;

// Descriptors registered by these tests. Registration is forever and a name
// may be registered once per process, so each is created on first use.
inline const sw::DTypeCategory& user_category() {
  static const sw::DTypeCategory& c =
      sw::DTypeCategory::create("test_operation_dtype_policy.user_category", &sw::DType::Any());
  return c;
}
inline const sw::PlanarCompoundDType& user_compound() {
  static const sw::PlanarCompoundDType& c =
      sw::PlanarCompoundDType::create("test_operation_dtype_policy.planar_compound", {&F32(), &F32()});
  return c;
}
// Looks like Float32 (32 bits, Floating) but is another descriptor.
inline const sw::SimpleDType& float32_impostor() {
  static const sw::SimpleDType& d = sw::SimpleDType::create("float32_impostor", 32, sw::DType::Floating());
  return d;
}

inline std::string dtype_name(const sw::SimpleDType* d) { return d ? d->name() : "None"; }

// Field-by-field comparison (operands' role/dtype/convert_to, compute,
// accumulation, accumulator dtype, output), then full equality.
inline void expect_plan(const sw::OperationPlan& actual, const sw::OperationPlan& expected) {
  SCOPED_TRACE("actual:   " + actual.to_string());
  SCOPED_TRACE("expected: " + expected.to_string());
  EXPECT_EQ(actual.operation(), expected.operation());
  ASSERT_EQ(actual.operands().size(), expected.operands().size());
  for (std::size_t i = 0; i < actual.operands().size(); ++i) {
    const sw::OperandPlan& a = actual.operands()[i];
    const sw::OperandPlan& e = expected.operands()[i];
    EXPECT_EQ(a.role(), e.role()) << "operand " << i;
    EXPECT_EQ(a.dtype(), e.dtype()) << "operand " << i << ": " << dtype_name(a.dtype()) << " vs "
                                    << dtype_name(e.dtype());
    EXPECT_EQ(&a.convert_to(), &e.convert_to())
        << "operand " << i << ": " << a.convert_to().name() << " vs " << e.convert_to().name();
  }
  EXPECT_EQ(actual.compute(), expected.compute());
  EXPECT_EQ(actual.accumulation(), expected.accumulation());
  EXPECT_EQ(actual.accumulator_dtype(), expected.accumulator_dtype())
      << dtype_name(actual.accumulator_dtype()) << " vs " << dtype_name(expected.accumulator_dtype());
  EXPECT_EQ(&actual.output(), &expected.output()) << actual.output().name() << " vs " << expected.output().name();
  EXPECT_TRUE(actual == expected);
  EXPECT_EQ(actual.hash(), expected.hash());
}

// A plan built by hand: operands, compute, accumulation, accumulator, output.
inline sw::OperationPlan make_plan(std::string op, std::vector<sw::OperandPlan> operands, sw::Arithmetic compute,
                                   std::optional<sw::Accumulation> acc, const sw::SimpleDType* acc_dtype,
                                   const sw::SimpleDType& out) {
  return sw::OperationPlan(std::move(op), std::move(operands), compute, acc, acc_dtype, out);
}

// Tensor operand plan src -> to; weak-scalar operand plan -> to.
inline sw::OperandPlan T(const sw::SimpleDType& src, const sw::SimpleDType& to) {
  return sw::OperandPlan::tensor(src, to);
}
inline sw::OperandPlan S(const sw::SimpleDType& to) { return sw::OperandPlan::weak_scalar(to); }

}  // namespace policy_test
