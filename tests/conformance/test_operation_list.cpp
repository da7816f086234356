// Issue 20, step 7: one home per operation. <strideweave/operations.def> is
// the one list of built-in operations; every table keyed by an operation is
// derived from it. These tests read the list with their own X-macros and
// check each derived table against it, so a table that kept a hand list (or
// a row a table ignores) fails here.
#include <gtest/gtest.h>

#include <strideweave/autograd.h>
#include <strideweave/call.h>
#include <strideweave/carriers/generic.h>
#include <strideweave/operation.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "autograd/gradcheck_cases.h"
#include "conformance/harness.h"
#include "execution/kernel_table.h"
#include "frontend/call_support.h"
#include "policy/operation_ids.h"
#include "policy/operation_table.h"

namespace strideweave {
namespace {

struct Row {
  std::string name, form, gradcheck;
  int ulps;
};

const std::vector<Row>& rows() {
  static const std::vector<Row> r = {
#define SW_OPERATION(id, form, policy, gradcheck, conformance, ulps) {#id, #form, #gradcheck, ulps},
#include <strideweave/operations.def>
  };
  return r;
}

struct OptionRow {
  std::string operation, name;
  operation::OptionValue value;
  std::string doc;
};

const std::vector<OptionRow>& option_rows() {
  static const std::vector<OptionRow> r = {
#define SW_OPTION(op, option_name, type, default_value, doc) \
  {#op, #option_name, operation::OptionValue(type{default_value}), doc},
#include <strideweave/operations.def>
  };
  return r;
}

std::set<std::string> names_where(bool (*keep)(const Row&)) {
  std::set<std::string> out;
  for (const Row& r : rows())
    if (keep(r)) out.insert(r.name);
  return out;
}

const frontend::BuiltinEntry* entry(std::string_view name) {
  for (const frontend::BuiltinEntry& e : frontend::builtin_entries())
    if (e.name == name) return &e;
  return nullptr;
}

TEST(OneHomePerOperation_Issue20Step7, TheIdsAreTheRowsInOrderAndEachNameIsListedOnce) {
  ASSERT_EQ(policy::kOperationCount, rows().size());
  std::set<std::string> seen;
  for (std::size_t i = 0; i < rows().size(); ++i) {
    EXPECT_EQ(policy::operation_name(static_cast<policy::OperationId>(i)), rows()[i].name);
    EXPECT_EQ(policy::find_operation_id(rows()[i].name), static_cast<policy::OperationId>(i));
    EXPECT_TRUE(seen.insert(rows()[i].name).second) << rows()[i].name << " is listed twice";
  }
  EXPECT_EQ(policy::find_operation_id("sort"), std::nullopt);  // a composite, not an operation
  EXPECT_EQ(policy::find_operation_id("no_such_operation"), std::nullopt);
}

TEST(OneHomePerOperation_Issue20Step7, ThePolicyTableHasOneSpecPerRow) {
  std::set<std::string> table;
  for (const OperationSpec& s : policy::operation_table()) {
    EXPECT_TRUE(table.insert(s.name()).second) << s.name();
    // Visibility is the spelling: the internal plans of sort and topk start with '_'.
    EXPECT_EQ(s.is_public(), s.name()[0] != '_') << s.name();
  }
  EXPECT_EQ(table, names_where([](const Row&) { return true; }));
}

TEST(OneHomePerOperation_Issue20Step7, EveryRowHasOneBuiltInRecordAndUnaryRowsAreTheOptionFreeUnaries) {
  // The records (definitions and the composites' reserved names) are the
  // rows plus the composites; the UNARY rows are exactly the records of the
  // form f(x) with x differentiable and no option, so an operation of that
  // form cannot be written by hand beside the generated ones.
  std::set<std::string> records, option_free_unary;
  for (const frontend::BuiltinEntry& e : frontend::builtin_entries()) {
    EXPECT_TRUE(records.insert(e.name).second) << e.name;
    const auto operands = e.schema.operands();
    if (!e.composite && operands.size() == 1 && operands[0].differentiable() && e.schema.options().empty())
      option_free_unary.insert(e.name);
  }
  std::set<std::string> expected = names_where([](const Row&) { return true; });
#define SW_COMPOSITE(id, values, indices) expected.insert(#id);
#include <strideweave/operations.def>
  EXPECT_EQ(records, expected);
  EXPECT_EQ(option_free_unary, names_where([](const Row& r) { return r.form == "UNARY"; }));
  for (const Row& r : rows()) EXPECT_NE(operation::get_definition(r.name), nullptr) << r.name;
}

TEST(OneHomePerOperation_Issue20Step7, EveryOptionRowIsTheSchemasOptionWithItsDefaultAndDoc) {
  ASSERT_FALSE(option_rows().empty());
  for (const OptionRow& o : option_rows()) {
    const frontend::BuiltinEntry* e = entry(o.operation);
    ASSERT_NE(e, nullptr) << o.operation;
    const operation::OptionSpec* spec = e->schema.option(o.name);
    ASSERT_NE(spec, nullptr) << o.operation << "." << o.name;
    EXPECT_EQ(spec->default_value(), operation::OptionSpec::Default(o.value)) << o.operation << "." << o.name;
    EXPECT_EQ(spec->doc(), o.doc) << o.operation << "." << o.name;
  }
  // The composites' plans take the composite's options.
#define SW_COMPOSITE(id, values, indices)                                                  \
  for (const char* part : {#values, #indices})                                             \
    for (const operation::OptionSpec& spec : entry(#id)->schema.options())                 \
      EXPECT_EQ(*entry(part)->schema.option(spec.name()), spec) << part << " " << spec.name();
#include <strideweave/operations.def>
}

TEST(OneHomePerOperation_Issue20Step7, TheCppDefaultArgumentsAreTheListedDefaults) {
  // The declarations read detail::option_defaults; a by-name call with no
  // option and the typed call with none give the same plan and values.
  static_assert(detail::option_defaults::leaky_relu_negative_slope == 0.01);
  static_assert(detail::option_defaults::softplus_threshold == 20.0);
  static_assert(detail::option_defaults::topk_largest);
  static_assert(detail::option_defaults::conv_general_groups == 1);
  const Tensor x(Generic::create(std::vector<Value>{Value::from_float32(-2.0f), Value::from_float32(0.5f)}, DType::Float32()), Shape{2});
  const Tensor typed = leaky_relu(x);
  const CallOperand operands[] = {x};
  const CallResult by_name = call_operation("leaky_relu", operands);
  EXPECT_EQ(typed.values(), by_name.results[0].values());
}

TEST(OneHomePerOperation_Issue20Step7, GradcheckCoversExactlyTheRowsWithDifferentiablePlans) {
  const std::vector<std::string> differentiable = autograd::differentiable_operations();
  const std::set<std::string> with_plans(differentiable.begin(), differentiable.end());
  const std::set<std::string> checked = names_where([](const Row& r) { return r.gradcheck != "none"; });
  EXPECT_EQ(checked, with_plans);
  std::set<std::string> builders;
  for (const auto& [name, builder] : autograd::gradcheck::case_builders()) builders.insert(name);
  EXPECT_EQ(builders, checked);
  for (const Row& r : rows())
    EXPECT_EQ(autograd::find_vjp(r.name) != nullptr, r.gradcheck != "none") << r.name << ": VJP vs gradcheck column";
}

TEST(OneHomePerOperation_Issue20Step7, GenericHasAKernelForEveryRow) {
  std::set<std::string> generic;
  for (const OperationPlan& p : kernel_table(carrier_class<Generic>())->plans()) generic.insert(p.operation());
  EXPECT_EQ(generic, names_where([](const Row&) { return true; }));
}

TEST(OneHomePerOperation_Issue20Step7, ConformanceGeneratorsAndToleranceComeFromTheRow) {
  std::set<std::string> generated;
  for (const auto& [name, generator] : conformance::case_generators()) generated.insert(name);
  EXPECT_EQ(generated, names_where([](const Row&) { return true; }));
  for (const OperationPlan& p : executable_plan_set()) {
    const auto row = std::find_if(rows().begin(), rows().end(), [&](const Row& r) { return r.name == p.operation(); });
    ASSERT_NE(row, rows().end()) << p.operation();
    const conformance::AgreementRule rule = conformance::agreement_rule(p);
    if (p.accumulation() == Accumulation::FLOATING) {
      EXPECT_EQ(rule.kind, conformance::AgreementRule::Floating) << p.to_string();
    } else if (row->ulps > 0) {
      EXPECT_EQ(rule.kind, conformance::AgreementRule::Ulps) << p.to_string();
      EXPECT_EQ(rule.ulps, row->ulps) << p.to_string();
    } else {
      EXPECT_EQ(rule.kind, conformance::AgreementRule::Exact) << p.to_string();
    }
  }
}

}  // namespace
}  // namespace strideweave
