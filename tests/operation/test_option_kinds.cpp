// Issue 21, step 4 (beyond operation-semantics.md): an option whose value
// does not fit its declared OptionKind is a TypeError naming the option,
// raised when the call is bound, before resolve runs. A spec without a kind
// (OptionKind::ANY) accepts every value, as the specification's OptionSpec.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "support/expect_exactly.h"

namespace {

using namespace strideweave;
namespace op = strideweave::operation;
using op::OperandKind;
using op::OperandSpec;
using op::OperationSchema;
using op::OptionKind;
using op::OptionSpec;
using op::OptionValue;
using op::ResultSpec;

std::string fresh_name(const std::string& stem) {
  static std::atomic<int> n{0};
  return "test_kinds" + std::to_string(n++) + "." + stem;
}

Tensor f32(std::initializer_list<float> v) { return make_tensor<CPU>(v, Shape{static_cast<std::int64_t>(v.size())}); }

// A definition whose resolve counts its calls and keeps the last options.
struct Echo {
  std::shared_ptr<const op::OperationDefinition> definition;
  std::shared_ptr<std::atomic<int>> resolves = std::make_shared<std::atomic<int>>(0);
};

Echo echo(OptionSpec spec) {
  Echo e;
  auto resolves = e.resolves;
  e.definition = op::define_operation(
      fresh_name("echo"), OperationSchema({OperandSpec("x", OperandKind::TENSOR)}, {std::move(spec)}),
      [resolves](const op::BoundOperationCall& call) {
        ++*resolves;
        const Tensor& x = call.tensor(0);
        OperationPlan plan(call.definition().name(), {OperandPlan::tensor(x.dtype(), x.dtype())},
                           Arithmetic::BINARY32, std::nullopt, nullptr, DType::Float32());
        return op::ResolvedInvocation(call, plan, {ResultSpec::compact(DType::Float32(), x.shape())});
      },
      std::nullopt, op::NON_DIFFERENTIABLE);
  return e;
}

OptionValue bound(const Echo& e, OptionValue v) {
  return op::bind(*e.definition, {f32({1})}, {{e.definition->schema().options()[0].name(), std::move(v)}})
      ->options()
      .begin()
      ->second;
}

TEST(OptionKinds_Issue21Step4, KindsHaveTheirStringValues) {
  EXPECT_EQ(op::value_of(OptionKind::ANY), "any");
  EXPECT_EQ(op::value_of(OptionKind::INTEGERS), "ints");
  EXPECT_EQ(op::option_kind("real"), OptionKind::REAL);
  EXPECT_THROW_EXACTLY(op::option_kind("float"), ValueError);
}

TEST(OptionKinds_Issue21Step4, AnyKindAcceptsEveryValueAsTheSpecificationSays) {
  const Echo e = echo(OptionSpec("v"));
  EXPECT_EQ(e.definition->schema().options()[0].kind(), OptionKind::ANY);
  for (const OptionValue& v : {OptionValue(true), OptionValue(std::int64_t{3}), OptionValue(std::string("s")),
                               OptionValue(std::monostate{}), OptionValue(&DType::Int32())})
    EXPECT_EQ(bound(e, v), v);
}

TEST(OptionKinds_Issue21Step4, AMismatchIsATypeErrorNamingTheOptionBeforeResolve) {
  const Echo e = echo(OptionSpec("axis", OptionValue(std::int64_t{0}), {}, OptionKind::INTEGER));
  try {
    (void)op::resolve_call(*e.definition, {f32({1})}, {{"axis", OptionValue(1.5)}});
    ADD_FAILURE() << "no TypeError";
  } catch (const TypeError& err) {
    const std::string what = err.what();
    EXPECT_NE(what.find(e.definition->name() + ": option 'axis' must be an integer, got 1.5"), std::string::npos)
        << what;
  }
  EXPECT_THROW_EXACTLY((void)op::resolve_call(*e.definition, {f32({1})}, {{"axis", OptionValue(true)}}), TypeError);
  EXPECT_THROW_EXACTLY((void)op::resolve_call(*e.definition, {f32({1})}, {{"axis", OptionValue(std::monostate{})}}),
                       TypeError);  // None does not fit: the default is not None
  EXPECT_EQ(e.resolves->load(), 0);
  (void)op::resolve_call(*e.definition, {f32({1})}, {{"axis", OptionValue(std::int64_t{-1})}});
  EXPECT_EQ(e.resolves->load(), 1);
}

TEST(OptionKinds_Issue21Step4, EachKindAdmitsItsValuesAndConvertsExactly) {
  const Echo real = echo(OptionSpec("v", OptionValue(1.0), {}, OptionKind::REAL));
  EXPECT_EQ(bound(real, OptionValue(std::int64_t{2})), OptionValue(2.0));  // an exact integer becomes a real
  EXPECT_EQ(bound(real, OptionValue(std::int64_t{1} << 53)), OptionValue(0x1p53));
  EXPECT_THROW_EXACTLY(bound(real, OptionValue((std::int64_t{1} << 53) + 1)), TypeError);  // no double holds it
  EXPECT_THROW_EXACTLY(bound(real, OptionValue(std::numeric_limits<std::int64_t>::max())), TypeError);
  EXPECT_EQ(bound(real, OptionValue(std::numeric_limits<std::int64_t>::min())), OptionValue(-0x1p63));
  EXPECT_THROW_EXACTLY(bound(real, OptionValue(false)), TypeError);

  const Echo ints = echo(OptionSpec("v", OptionValue(std::monostate{}), {}, OptionKind::INTEGERS));
  EXPECT_EQ(bound(ints, OptionValue(std::int64_t{3})), OptionValue(std::vector<std::int64_t>{3}));
  EXPECT_EQ(bound(ints, OptionValue(std::vector<std::int64_t>{})), OptionValue(std::vector<std::int64_t>{}));
  EXPECT_EQ(bound(ints, OptionValue(std::monostate{})), OptionValue(std::monostate{}));  // the default is None
  EXPECT_THROW_EXACTLY(bound(ints, OptionValue(std::string("0"))), TypeError);

  const Echo flag = echo(OptionSpec("v", OptionValue(false), {}, OptionKind::BOOL));
  EXPECT_EQ(bound(flag, OptionValue(true)), OptionValue(true));
  EXPECT_THROW_EXACTLY(bound(flag, OptionValue(std::int64_t{1})), TypeError);

  const Echo text = echo(OptionSpec("v", op::REQUIRED, {}, OptionKind::TEXT));
  EXPECT_EQ(bound(text, OptionValue(std::string("fast"))), OptionValue(std::string("fast")));
  EXPECT_THROW_EXACTLY(bound(text, OptionValue(&DType::Float32())), TypeError);

  const Echo dtype = echo(OptionSpec("v", OptionValue(std::monostate{}), {}, OptionKind::DTYPE));
  EXPECT_EQ(bound(dtype, OptionValue(&DType::Int32())), OptionValue(&DType::Int32()));
  EXPECT_THROW_EXACTLY(bound(dtype, OptionValue(std::string("int32"))), TypeError);
}

TEST(OptionKinds_Issue21Step4, ADefaultMustFitItsKind) {
  EXPECT_THROW_EXACTLY(OptionSpec("v", OptionValue(std::string("x")), {}, OptionKind::INTEGER), TypeError);
  EXPECT_THROW_EXACTLY(OptionSpec("v", OptionValue(std::int64_t{1}), {}, OptionKind::BOOL), TypeError);
  // Converted as a bound value is; None and REQUIRED fit every kind.
  EXPECT_EQ(OptionSpec("v", OptionValue(std::int64_t{2}), {}, OptionKind::REAL).default_value(),
            OptionSpec::Default(OptionValue(2.0)));
  EXPECT_NO_THROW(OptionSpec("v", OptionValue(std::monostate{}), {}, OptionKind::TEXT));
  EXPECT_NO_THROW(OptionSpec("v", op::REQUIRED, {}, OptionKind::DTYPE));
  // The kind takes part in equality.
  EXPECT_FALSE(OptionSpec("v", op::REQUIRED, {}, OptionKind::INTEGER) == OptionSpec("v", op::REQUIRED));
}

// Every built-in option declares a kind, and its default fits it; a wrong
// value through the by-name path and through the definition says the same.
TEST(OptionKinds_Issue21Step4, EveryBuiltInOptionDeclaresAKind) {
  int options = 0;
  for (const auto& d : op::registered_definitions()) {
    if (!d->is_builtin()) continue;
    for (const OptionSpec& o : d->schema().options()) {
      ++options;
      EXPECT_NE(o.kind(), OptionKind::ANY) << d->name() << "." << o.name();
    }
  }
  EXPECT_GT(options, 20);
  EXPECT_EQ(op::get_definition("elu")->schema().option("alpha")->kind(), OptionKind::REAL);
  EXPECT_EQ(op::get_definition("reduce_sum")->schema().option("axes")->kind(), OptionKind::INTEGERS);
  EXPECT_EQ(op::get_definition("reduce_sum")->schema().option("accumulator_dtype")->kind(), OptionKind::DTYPE);
  EXPECT_EQ(op::get_definition("gelu")->schema().option("approximate")->kind(), OptionKind::BOOL);

  const Tensor x = f32({1, -1});
  try {
    (void)op::resolve_call(*op::get_definition("elu"), {x}, {{"alpha", OptionValue(std::string("big"))}});
    ADD_FAILURE() << "no TypeError";
  } catch (const TypeError& err) {
    EXPECT_NE(std::string(err.what()).find("elu: option 'alpha' must be a real number, got 'big'"), std::string::npos)
        << err.what();
  }
  EXPECT_THROW_EXACTLY(
      call_operation("gelu", std::vector<CallOperand>{x}, CallOptions{{"approximate", OptionValue(std::int64_t{1})}}),
      TypeError);
  // Only the kind check catches an integer no double holds (elu's own
  // reader would round it).
  EXPECT_THROW_EXACTLY(call_operation("elu", std::vector<CallOperand>{x},
                                      CallOptions{{"alpha", OptionValue((std::int64_t{1} << 53) + 1)}}),
                       TypeError);
}

}  // namespace
