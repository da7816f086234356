// backend-capabilities.md: one test (suite) per requirement, one test per
// scenario or contract clause. Suites are named
// BackendCapabilities_<Requirement>; custom classes come from
// capability_test_support.h with indices 1 .. 199 (one fresh class per test,
// because the class-level registry is global and permanent).
//
// Out of scope here (see the report): CarrierDefinition-backed carriers,
// kernel packs, Evictable/TiledEvictable, Metal, CUDA, FileBacked and
// BlockDeviceCarrier.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <random>
#include <set>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "capability/capability_test_support.h"
#include "execution/kernel_table.h"
#include "support/expect_exactly.h"

namespace sw_caps {
namespace {

const DType* kStoredDtypes[] = {&DType::Float32(), &DType::Int32(), &DType::Bool()};
const SimpleDType* kSimpleDtypes[] = {&DType::Float32(), &DType::Int32(), &DType::Bool(), &DType::Float64()};

const CompoundDType& test_compound() {
  static const CompoundDType& c =
      PlanarCompoundDType::create("sw_caps_test_compound", {&DType::Float32(), &DType::Float32()});
  return c;
}

OperationPlan plan_with(const OperationPlan& p, std::string operation, std::vector<OperandPlan> operands) {
  return OperationPlan(std::move(operation), std::move(operands), p.compute(), p.accumulation(), p.accumulator_dtype(),
                       p.output());
}
std::vector<OperandPlan> operands_of(const OperationPlan& p) { return {p.operands().begin(), p.operands().end()}; }

// Every plan that differs from `p` in exactly one field, labelled by field.
std::vector<std::pair<std::string, OperationPlan>> near_misses(const OperationPlan& p) {
  std::vector<std::pair<std::string, OperationPlan>> out;
  const std::vector<OperandPlan> ops = operands_of(p);
  out.emplace_back("operation", plan_with(p, p.operation() + "_x", ops));
  // operand order
  for (std::size_t i = 0; i < ops.size(); ++i)
    for (std::size_t j = i + 1; j < ops.size(); ++j)
      if (!(ops[i] == ops[j])) {
        std::vector<OperandPlan> swapped = ops;
        std::swap(swapped[i], swapped[j]);
        out.emplace_back("operand order", plan_with(p, p.operation(), swapped));
      }
  // operand count
  if (ops.size() > 1) out.emplace_back("operand count", plan_with(p, p.operation(), {ops.begin(), ops.end() - 1}));
  {
    std::vector<OperandPlan> more = ops;
    more.push_back(ops.back());
    out.emplace_back("operand count", plan_with(p, p.operation(), more));
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const OperandPlan& o = ops[i];
    auto replaced = [&](OperandPlan r) {
      std::vector<OperandPlan> v = ops;
      v[i] = r;
      return plan_with(p, p.operation(), v);
    };
    // role
    if (o.role() == OperandRole::TENSOR) out.emplace_back("role", replaced(OperandPlan::weak_scalar(o.convert_to())));
    else out.emplace_back("role", replaced(OperandPlan::tensor(o.convert_to(), o.convert_to())));
    // source dtype
    if (o.role() == OperandRole::TENSOR)
      for (const SimpleDType* d : kSimpleDtypes)
        if (d != o.dtype()) out.emplace_back("source dtype", replaced(OperandPlan::tensor(*d, o.convert_to())));
    // conversion
    for (const SimpleDType* d : kSimpleDtypes)
      if (d != &o.convert_to()) out.emplace_back("conversion", replaced(OperandPlan(o.role(), o.dtype(), *d)));
  }
  for (Arithmetic a : all_arithmetics())
    if (a != p.compute())
      out.emplace_back("compute", OperationPlan(p.operation(), ops, a, p.accumulation(), p.accumulator_dtype(), p.output()));
  if (p.accumulation())
    out.emplace_back("accumulation presence",
                     OperationPlan(p.operation(), ops, p.compute(), std::nullopt, p.accumulator_dtype(), p.output()));
  for (Accumulation a : all_accumulations())
    if (!p.accumulation() || *p.accumulation() != a)
      out.emplace_back(p.accumulation() ? "accumulation value" : "accumulation presence",
                       OperationPlan(p.operation(), ops, p.compute(), a, p.accumulator_dtype(), p.output()));
  for (const SimpleDType* acc : {static_cast<const SimpleDType*>(nullptr), &DType::Float32(), &DType::Float64()})
    if (acc != p.accumulator_dtype())
      out.emplace_back("accumulator", OperationPlan(p.operation(), ops, p.compute(), p.accumulation(), acc, p.output()));
  for (const SimpleDType* d : kSimpleDtypes)
    if (d != &p.output())
      out.emplace_back("output", OperationPlan(p.operation(), ops, p.compute(), p.accumulation(), p.accumulator_dtype(), *d));
  return out;
}

// The one invalid OperationCapability C++ can express. An entry that is not a
// capability does not compile (declarations and generators are vectors of
// OperationCapability), and a record built from invalid fields raises in its
// constructor, in the caller's code. A moved-from record has no operands:
// here entry 1 of four, after a valid one.
std::vector<OperationCapability> with_moved_from_entry() {
  std::vector<OperationCapability> caps = caps_of({f32_add_plan(), i32_add_plan(), f32_relu_plan()});
  OperationCapability taken = std::move(caps[1]);  // caps[1] is now moved-from
  caps.push_back(std::move(taken));
  return caps;
}

// ============================================================ Requirement: A capability mirrors every plan matching dimension

TEST(BackendCapabilities_CapabilityMirrorsPlan, ConstructValidCapability) {
  const OperandCapability t(OperandRole::TENSOR, &DType::Int32(), &DType::Float32());
  const OperandCapability s(OperandRole::WEAK_SCALAR, nullptr, &DType::Float32());
  const OperationCapability c("matmul", {t, s}, Arithmetic::BINARY32, Accumulation::FLOATING, &DType::Float64(),
                              &DType::Float32());
  EXPECT_EQ(c.operation(), "matmul");
  ASSERT_EQ(c.operands().size(), 2u);
  EXPECT_EQ(c.operands()[0].role(), OperandRole::TENSOR);
  EXPECT_EQ(c.operands()[0].dtype(), &DType::Int32());
  EXPECT_EQ(&c.operands()[0].convert_to(), &DType::Float32());
  EXPECT_EQ(c.operands()[1].role(), OperandRole::WEAK_SCALAR);
  EXPECT_EQ(c.operands()[1].dtype(), nullptr);
  EXPECT_EQ(&c.operands()[1].convert_to(), &DType::Float32());
  EXPECT_EQ(c.compute(), Arithmetic::BINARY32);
  EXPECT_EQ(c.accumulation(), std::optional<Accumulation>(Accumulation::FLOATING));
  EXPECT_EQ(c.accumulator_dtype(), &DType::Float64());
  EXPECT_EQ(&c.output(), &DType::Float32());
  const OperationCapability none("relu", {t}, Arithmetic::BINARY32, std::nullopt, nullptr, &DType::Float32());
  EXPECT_FALSE(none.accumulation().has_value());
  EXPECT_EQ(none.accumulator_dtype(), nullptr);
}

TEST(BackendCapabilities_CapabilityMirrorsPlan, RejectWeakScalarWithStorageDtype) {
  EXPECT_THROW_EXACTLY(OperandCapability(OperandRole::WEAK_SCALAR, &DType::Float32(), &DType::Float32()), TypeError);
  EXPECT_THROW_EXACTLY(OperandCapability(OperandRole::WEAK_SCALAR, &DType::Int32(), &DType::Int32()), TypeError);
}

TEST(BackendCapabilities_CapabilityMirrorsPlan, RejectTensorWithoutDtype) {
  EXPECT_THROW_EXACTLY(OperandCapability(OperandRole::TENSOR, nullptr, &DType::Float32()), TypeError);
}

TEST(BackendCapabilities_CapabilityMirrorsPlan, RejectCategoryOrCompoundOperandDtype) {
  EXPECT_THROW_EXACTLY(OperandCapability(OperandRole::TENSOR, &DType::Floating(), &DType::Float32()), TypeError);
  EXPECT_THROW_EXACTLY(OperandCapability(OperandRole::TENSOR, &DType::Any(), &DType::Float32()), TypeError);
  EXPECT_THROW_EXACTLY(OperandCapability(OperandRole::TENSOR, &test_compound(), &DType::Float32()), TypeError);
}

TEST(BackendCapabilities_CapabilityMirrorsPlan, RejectInvalidConversionTarget) {
  EXPECT_THROW_EXACTLY(OperandCapability(OperandRole::TENSOR, &DType::Float32(), nullptr), TypeError);
  EXPECT_THROW_EXACTLY(OperandCapability(OperandRole::WEAK_SCALAR, nullptr, nullptr), TypeError);
  EXPECT_THROW_EXACTLY(OperandCapability(OperandRole::TENSOR, &DType::Float32(), &DType::Integer()), TypeError);
  EXPECT_THROW_EXACTLY(OperandCapability(OperandRole::WEAK_SCALAR, nullptr, &test_compound()), TypeError);
}

TEST(BackendCapabilities_CapabilityMirrorsPlan, RejectInvalidOperationFields) {
  const OperandCapability t(OperandRole::TENSOR, &DType::Float32(), &DType::Float32());
  // An empty name is the C++ spelling of "operation is not a string".
  EXPECT_THROW_EXACTLY(OperationCapability("", {t}, Arithmetic::BINARY32, std::nullopt, nullptr, &DType::Float32()),
                       TypeError);
  // output: None, a category, a compound.
  EXPECT_THROW_EXACTLY(OperationCapability("relu", {t}, Arithmetic::BINARY32, std::nullopt, nullptr, nullptr),
                       TypeError);
  EXPECT_THROW_EXACTLY(OperationCapability("relu", {t}, Arithmetic::BINARY32, std::nullopt, nullptr, &DType::Any()),
                       TypeError);
  EXPECT_THROW_EXACTLY(OperationCapability("relu", {t}, Arithmetic::BINARY32, std::nullopt, nullptr, &test_compound()),
                       TypeError);
  // accumulator_dtype: a category or a compound (None is valid).
  EXPECT_THROW_EXACTLY(OperationCapability("reduce_sum", {t}, Arithmetic::BINARY32, Accumulation::FLOATING,
                                           &DType::Floating(), &DType::Float32()),
                       TypeError);
  EXPECT_THROW_EXACTLY(OperationCapability("reduce_sum", {t}, Arithmetic::BINARY32, Accumulation::FLOATING,
                                           &test_compound(), &DType::Float32()),
                       TypeError);
}

TEST(BackendCapabilities_CapabilityMirrorsPlan, RejectEmptyOperands) {
  EXPECT_THROW_EXACTLY(OperationCapability("relu", {}, Arithmetic::BINARY32, std::nullopt, nullptr, &DType::Float32()),
                       ValueError);
}

// Writes `intruder` through `answer` when the language allows it (an answer
// handed out by value, or a mutable reference into the registry); a const
// view is left alone, as nothing can write through it.
template <class Answer>
void write_through(Answer&& answer, const OperationCapability& intruder) {
  if constexpr (std::is_assignable_v<decltype((answer)), const OperationCapability&>) answer = intruder;
}

TEST(BackendCapabilities_CapabilityMirrorsPlan, RecordsAreImmutableAndExecutorFree) {
  // The public surface of a record is const accessors returning values or
  // const views; nothing writes through a view of its operands.
  static_assert(std::is_same_v<decltype(std::declval<const OperationCapability&>().operands()),
                               std::span<const OperandCapability>>);
  static_assert(!std::is_assignable_v<decltype(std::declval<const OperationCapability&>().operands()[0]),
                                      const OperandCapability&>);
  static_assert(std::is_same_v<decltype(std::declval<const OperationCapability&>().output()), const SimpleDType&>);
  static_assert(std::is_same_v<decltype(std::declval<const OperationCapability&>().operation()), const std::string&>);
  static_assert(std::is_same_v<decltype(std::declval<const OperandCapability&>().dtype()), const SimpleDType*>);
  static_assert(std::is_same_v<decltype(std::declval<const OperandCapability&>().convert_to()), const SimpleDType&>);

  // Immutable through the library: whatever a query hands out, writing
  // another record through it (where the language allows that at all)
  // changes no later answer, for a kernel-backed class, a declared class, a
  // carrier instance and a dependent instance's snapshot.
  const OperationPlan plan = f32_add_plan();
  const OperationCapability intruder = OperationCapability::from_plan(i32_relu_plan());
  const auto generic = Generic::zeros(1, DType::Float32());
  const CarrierClass generic_class = carrier_class<Generic>();
  const std::vector<OperationCapability> generic_before = capabilities_for_carrier_class(generic_class);
  const OperationCapability add_before = require_capability(generic_class, plan);
  {
    std::vector<OperationCapability> all = capabilities_for_carrier_class(generic_class);
    for (OperationCapability& c : all) write_through(c, intruder);
    write_through(require_capability(generic_class, plan), intruder);
    std::optional<OperationCapability> matched = matching_capability(generic_class, plan);
    ASSERT_TRUE(matched.has_value());
    write_through(*matched, intruder);
    write_through(generic->require_operation_plan(plan), intruder);
    std::vector<OperationCapability> instance_all = generic->operation_capabilities();
    for (OperationCapability& c : instance_all) write_through(c, intruder);
  }
  EXPECT_EQ(capabilities_for_carrier_class(generic_class), generic_before);
  EXPECT_EQ(require_capability(generic_class, plan), add_before);
  EXPECT_EQ(generic->require_operation_plan(plan), add_before);
  EXPECT_EQ(generic->operation_capabilities(), generic_before);

  // A declaration is copied when registered: rewriting the caller's records
  // afterwards changes nothing.
  std::vector<OperationCapability> declared = caps_of({f32_add_plan(), f32_relu_plan()});
  const std::vector<OperationCapability> declared_before = sorted(declared);
  register_operation_capabilities(Custom<50>::cls(), declared);
  for (OperationCapability& c : declared) c = intruder;
  write_through(require_capability(Custom<50>::cls(), plan), intruder);
  EXPECT_EQ(capabilities_for_carrier_class(Custom<50>::cls()), declared_before);

  // A dependent snapshot is frozen from the generator's answer: rewriting
  // what the generator handed out, or what the instance hands out, changes
  // nothing.
  const auto generated = std::make_shared<std::vector<OperationCapability>>(caps_of({f32_relu_plan(), f32_add_plan()}));
  const auto d = std::make_shared<TestDependent>([generated] { return *generated; }, true);
  const std::vector<OperationCapability> snapshot_before = sorted(caps_of({f32_relu_plan(), f32_add_plan()}));
  for (OperationCapability& c : *generated) c = intruder;
  for (auto&& c : d->capability_snapshot()) write_through(c, intruder);
  write_through(d->require_operation_plan(plan), intruder);
  std::vector<OperationCapability> dependent_all = d->operation_capabilities();
  for (OperationCapability& c : dependent_all) write_through(c, intruder);
  EXPECT_EQ(d->operation_capabilities(), snapshot_before);
  EXPECT_EQ(std::vector<OperationCapability>(d->capability_snapshot().begin(), d->capability_snapshot().end()),
            snapshot_before);

  // Executor-free: a record is its plan shape and nothing else. Each
  // kernel-backed entry equals, and hashes as, the record rebuilt from its
  // plan alone (no kernel in sight), and a declared class's record of the
  // same plan equals Generic's.
  for (const ShippedCarrier& shipped : shipped_carriers())
    for (const OperationCapability& c : capabilities_for_carrier_class(shipped.cls)) {
      const OperationCapability rebuilt = OperationCapability::from_plan(c.to_plan());
      EXPECT_EQ(c, rebuilt) << shipped.name << ": " << c.to_plan().to_string();
      EXPECT_EQ(std::hash<OperationCapability>()(c), std::hash<OperationCapability>()(rebuilt));
    }
  const std::vector<OperationCapability> same_plan{OperationCapability::from_plan(plan)};
  register_operation_capabilities(Custom<51>::cls(), same_plan);
  EXPECT_EQ(require_capability(Custom<51>::cls(), plan), add_before);
}

TEST(BackendCapabilities_CapabilityMirrorsPlan, EqualityAndHash) {
  const OperandCapability a(OperandRole::TENSOR, &DType::Float32(), &DType::Float32());
  const OperandCapability a2(OperandRole::TENSOR, &DType::Float32(), &DType::Float32());
  const OperandCapability b(OperandRole::TENSOR, &DType::Int32(), &DType::Float32());
  const OperandCapability c(OperandRole::WEAK_SCALAR, nullptr, &DType::Float32());
  EXPECT_EQ(a, a2);
  EXPECT_EQ(std::hash<OperandCapability>()(a), std::hash<OperandCapability>()(a2));
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(std::unordered_set<OperandCapability>({a, a2, b, c}).size(), 3u);

  const OperationCapability x = OperationCapability::from_plan(f32_add_plan());
  const OperationCapability x2 = OperationCapability::from_plan(f32_add_plan());
  const OperationCapability y = OperationCapability::from_plan(i32_add_plan());
  EXPECT_EQ(x, x2);
  EXPECT_EQ(std::hash<OperationCapability>()(x), std::hash<OperationCapability>()(x2));
  EXPECT_NE(x, y);
  EXPECT_EQ(std::unordered_set<OperationCapability>({x, x2, y}).size(), 2u);
}

// ============================================================ Requirement: Capabilities match plans exactly

TEST(BackendCapabilities_CapabilitiesMatchPlans, RoundTripResolvedPlan) {
  std::vector<OperationPlan> plans = resolvable_plans();
  for (const OperationPlan& p : executable_plan_set()) plans.push_back(p);
  ASSERT_GT(plans.size(), 50u);
  for (const OperationPlan& p : plans) {
    const OperationCapability c = OperationCapability::from_plan(p);
    EXPECT_TRUE(c.matches(p)) << p.to_string();
    EXPECT_EQ(c.to_plan(), p) << p.to_string();
    EXPECT_EQ(c.operation(), p.operation());
    ASSERT_EQ(c.operands().size(), p.operands().size());
    for (std::size_t i = 0; i < p.operands().size(); ++i) {
      EXPECT_EQ(c.operands()[i].role(), p.operands()[i].role());
      EXPECT_EQ(c.operands()[i].dtype(), p.operands()[i].dtype());
      EXPECT_EQ(&c.operands()[i].convert_to(), &p.operands()[i].convert_to());
    }
    EXPECT_EQ(c.compute(), p.compute());
    EXPECT_EQ(c.accumulation(), p.accumulation());
    EXPECT_EQ(c.accumulator_dtype(), p.accumulator_dtype());
    EXPECT_EQ(&c.output(), &p.output());
  }
}

TEST(BackendCapabilities_CapabilitiesMatchPlans, RejectNearMatch) {
  std::map<std::string, int> per_field;
  for (const OperationPlan& p : resolvable_plans()) {
    const OperationCapability c = OperationCapability::from_plan(p);
    for (const auto& [field, variant] : near_misses(p)) {
      ASSERT_FALSE(variant == p) << field << ": " << variant.to_string();
      EXPECT_FALSE(c.matches(variant)) << field << ": capability " << p.to_string() << " matched " << variant.to_string();
      EXPECT_FALSE(OperationCapability::from_plan(variant).matches(p)) << field << ": " << variant.to_string();
      EXPECT_TRUE(OperationCapability::from_plan(variant).matches(variant));
      EXPECT_FALSE(c == OperationCapability::from_plan(variant));
      ++per_field[field];
    }
  }
  // Every plan-matching dimension was exercised.
  for (const char* f : {"operation", "operand order", "operand count", "role", "source dtype", "conversion", "compute",
                        "accumulation presence", "accumulation value", "accumulator", "output"})
    EXPECT_GT(per_field[f], 0) << f;
}

TEST(BackendCapabilities_CapabilitiesMatchPlans, NearMatchIsNotSupportedByShippedClass) {
  // Matching never substitutes a nearby shape: a near miss of a Generic plan
  // is supported only if it is itself one of Generic's exact entries.
  const std::vector<OperationCapability> caps = capabilities_for_carrier_class(carrier_class<Generic>());
  const std::unordered_set<OperationPlan> own = plan_set(plans_of(caps));
  int checked = 0;
  for (const OperationCapability& c : caps)
    for (const auto& [field, variant] : near_misses(c.to_plan())) {
      EXPECT_EQ(supports_operation_plan(carrier_class<Generic>(), variant), own.count(variant) == 1)
          << field << ": " << variant.to_string();
      ++checked;
    }
  EXPECT_GT(checked, 1000);
}

// ============================================================ Requirement: Independent capabilities belong to one exact class

TEST(BackendCapabilities_ExactClassOwnership, QueryUndeclaredSubclass) {
  register_operation_capabilities(carrier_class<Base<1>>(), caps_of({f32_add_plan()}));
  EXPECT_TRUE(supports_operation_plan(carrier_class<Base<1>>(), f32_add_plan()));
  EXPECT_FALSE(supports_operation_plan(carrier_class<Sub<1>>(), f32_add_plan()));
  EXPECT_TRUE(capabilities_for_carrier_class(carrier_class<Sub<1>>()).empty());
  // The instance query of a subclass object reads the subclass's answer.
  const auto sub = std::make_shared<Sub<1>>(DType::Float32(), f32_values({1, 2}), true);
  EXPECT_TRUE(sub->operation_capabilities().empty());
  EXPECT_FALSE(sub->supports_operation_plan(f32_add_plan()));
  EXPECT_THROW_EXACTLY(sub->require_operation_plan(f32_add_plan()), UnsupportedOperationPlan);
  // ... and the gate refuses the base class's plan on it.
  const Tensor t(sub, Shape{2});
  EXPECT_THROW_EXACTLY(add(t, t), UnsupportedOperationPlan);
}

TEST(BackendCapabilities_ExactClassOwnership, SubclassDeclarationDoesNotWidenBase) {
  register_operation_capabilities(carrier_class<Sub<2>>(), caps_of({f32_add_plan(), f32_relu_plan()}));
  EXPECT_EQ(capabilities_for_carrier_class(carrier_class<Sub<2>>()).size(), 2u);
  EXPECT_FALSE(supports_operation_plan(carrier_class<Base<2>>(), f32_add_plan()));
  EXPECT_TRUE(capabilities_for_carrier_class(carrier_class<Base<2>>()).empty());
  const auto base = std::make_shared<Base<2>>(DType::Float32(), f32_values({1}), true);
  EXPECT_TRUE(base->operation_capabilities().empty());
}

TEST(BackendCapabilities_ExactClassOwnership, SiblingDeclarationsStayIsolated) {
  register_operation_capabilities(carrier_class<Base<3>>(), caps_of({f32_relu_plan()}));
  register_operation_capabilities(carrier_class<Sub<3>>(), caps_of({f32_add_plan()}));
  register_operation_capabilities(carrier_class<Sibling<3>>(), caps_of({i32_add_plan()}));
  EXPECT_EQ(plans_of(capabilities_for_carrier_class(carrier_class<Base<3>>())), std::vector<OperationPlan>{f32_relu_plan()});
  EXPECT_EQ(plans_of(capabilities_for_carrier_class(carrier_class<Sub<3>>())), std::vector<OperationPlan>{f32_add_plan()});
  EXPECT_EQ(plans_of(capabilities_for_carrier_class(carrier_class<Sibling<3>>())),
            std::vector<OperationPlan>{i32_add_plan()});
  EXPECT_FALSE(supports_operation_plan(carrier_class<Sub<3>>(), i32_add_plan()));
  EXPECT_FALSE(supports_operation_plan(carrier_class<Sibling<3>>(), f32_add_plan()));
  EXPECT_FALSE(supports_operation_plan(carrier_class<Sub<3>>(), f32_relu_plan()));
  EXPECT_FALSE(supports_operation_plan(carrier_class<Sibling<3>>(), f32_relu_plan()));
}

TEST(BackendCapabilities_ExactClassOwnership, UndeclaredClassSupportsNothing) {
  for (const OperationPlan& p : executable_plan_set()) {
    EXPECT_FALSE(supports_operation_plan(Custom<4>::cls(), p)) << p.to_string();
    EXPECT_FALSE(matching_capability(Custom<4>::cls(), p).has_value());
  }
  EXPECT_TRUE(capabilities_for_carrier_class(Custom<4>::cls()).empty());
}

// ============================================================ Requirement: Public registration is complete, atomic, and one-shot

TEST(BackendCapabilities_PublicRegistration, DeclareCustomIndependentBackend) {
  const std::vector<OperationCapability> declared =
      caps_of({f32_relu_plan(), i32_add_plan(), f32_add_plan(), f32_mul_scalar_plan()});
  register_operation_capabilities(Custom<10>::cls(), declared);
  const std::vector<OperationCapability> answer = capabilities_for_carrier_class(Custom<10>::cls());
  EXPECT_EQ(answer, sorted(declared));
  for (const OperationCapability& c : declared) {
    EXPECT_TRUE(supports_operation_plan(Custom<10>::cls(), c.to_plan()));
    EXPECT_EQ(require_capability(Custom<10>::cls(), c.to_plan()), c);
  }
  EXPECT_FALSE(supports_operation_plan(Custom<10>::cls(), i32_relu_plan()));
  // The instance query reads the same declaration.
  const auto inst = Custom<10>::make(DType::Int32(), i32_values({1, 2, 3}));
  EXPECT_EQ(inst->operation_capabilities(), answer);
  // The declared axes are kept beside the declared capability.
  ExecutionAxes axes;
  axes.caller_output = SupportLevel::FallbackCopy;
  register_operation_capabilities(Custom<11>::cls(), caps_of({f32_add_plan()}), std::vector<ExecutionAxes>{axes});
  EXPECT_EQ(execution_axes(Custom<11>::cls(), require_capability(Custom<11>::cls(), f32_add_plan())), axes);
}

TEST(BackendCapabilities_PublicRegistration, EmptyDeclarationIsComplete) {
  register_operation_capabilities(Custom<12>::cls(), std::vector<OperationCapability>{});
  EXPECT_TRUE(capabilities_for_carrier_class(Custom<12>::cls()).empty());
  EXPECT_FALSE(supports_operation_plan(Custom<12>::cls(), f32_add_plan()));
  EXPECT_THROW_EXACTLY(register_operation_capabilities(Custom<12>::cls(), caps_of({f32_add_plan()})), TypeError);
  EXPECT_TRUE(capabilities_for_carrier_class(Custom<12>::cls()).empty());
}

TEST(BackendCapabilities_PublicRegistration, RejectDuplicateShapesAtomically) {
  // The same exact shape twice (here with different axes beside them: the
  // shape decides).
  ExecutionAxes other;
  other.accumulation = SupportLevel::FallbackCopy;
  const std::vector<OperationCapability> dup = caps_of({f32_relu_plan(), f32_add_plan(), f32_add_plan()});
  const std::vector<ExecutionAxes> dup_axes{ExecutionAxes{}, ExecutionAxes{}, other};
  EXPECT_THROW_EXACTLY(register_operation_capabilities(Custom<13>::cls(), dup, dup_axes), ValueError);
  const std::vector<OperationCapability> exact_dup = caps_of({i32_add_plan(), i32_add_plan()});
  EXPECT_THROW_EXACTLY(register_operation_capabilities(Custom<13>::cls(), exact_dup), ValueError);
  // Nothing was published and the class stays open: a later valid
  // declaration succeeds and becomes the whole answer. (No query here: a
  // query would observe and seal the class.)
  register_operation_capabilities(Custom<13>::cls(), caps_of({i32_relu_plan()}));
  EXPECT_EQ(plans_of(capabilities_for_carrier_class(Custom<13>::cls())), std::vector<OperationPlan>{i32_relu_plan()});
  EXPECT_FALSE(supports_operation_plan(Custom<13>::cls(), f32_relu_plan()));
  EXPECT_FALSE(supports_operation_plan(Custom<13>::cls(), f32_add_plan()));
}

TEST(BackendCapabilities_PublicRegistration, RejectNonCarrierClass) {
  EXPECT_THROW_EXACTLY(register_operation_capabilities(carrier_class<int>(), caps_of({f32_add_plan()})), TypeError);
  EXPECT_THROW_EXACTLY(
      register_operation_capabilities(carrier_class<std::string>(), std::vector<OperationCapability>{}),
      TypeError);
}

TEST(BackendCapabilities_PublicRegistration, NonCapabilityEntryIsRejectedAtCompileTime) {
  // The C++ spelling of "a non-capability entry fails with TypeError": the
  // declaration is a range of OperationCapability, so another entry type does
  // not compile.
  using Axes = std::span<const ExecutionAxes>;  // the execution axes kept beside the entries
  static_assert(
      !std::is_invocable_v<decltype(&register_operation_capabilities), CarrierClass, std::vector<int>, Axes>);
  static_assert(!std::is_invocable_v<decltype(&register_operation_capabilities), CarrierClass,
                                     std::vector<OperationPlan>, Axes>);
  static_assert(std::is_invocable_v<decltype(&register_operation_capabilities), CarrierClass,
                                    std::vector<OperationCapability>, Axes>);
  SUCCEED();
}

TEST(BackendCapabilities_PublicRegistration, RejectInvalidEntryAtomically) {
  // with_moved_from_entry: TypeError, nothing published, the class stays open.
  const std::vector<OperationCapability> caps = with_moved_from_entry();
  const std::string message = EXACT_ERROR_MESSAGE(register_operation_capabilities(Custom<16>::cls(), caps), TypeError);
  EXPECT_NE(message.find("entry 1"), std::string::npos) << message;
  register_operation_capabilities(Custom<16>::cls(), caps_of({i32_relu_plan()}));
  EXPECT_EQ(plans_of(capabilities_for_carrier_class(Custom<16>::cls())), std::vector<OperationPlan>{i32_relu_plan()});
}

TEST(BackendCapabilities_PublicRegistration, RejectCarrierRoot) {
  EXPECT_THROW_EXACTLY(register_operation_capabilities(carrier_class<Carrier>(), caps_of({f32_add_plan()})), TypeError);
  EXPECT_THROW_EXACTLY(register_operation_capabilities(carrier_class<Carrier>(), std::vector<OperationCapability>{}),
                       TypeError);
}

TEST(BackendCapabilities_PublicRegistration, RejectDependentCarrierClass) {
  const auto inst = std::make_shared<TestDependent>([] { return caps_of({f32_add_plan()}); }, true);
  EXPECT_THROW_EXACTLY(register_operation_capabilities(carrier_class<TestDependent>(), caps_of({f32_relu_plan()})),
                       TypeError);
  EXPECT_THROW_EXACTLY(
      register_operation_capabilities(carrier_class<DependentCarrier>(), std::vector<OperationCapability>{}),
      TypeError);
  EXPECT_THROW_EXACTLY(register_operation_capabilities(inst->exact_class(), caps_of({f32_relu_plan()})), TypeError);
  // No instance snapshot changed.
  EXPECT_EQ(plans_of(inst->operation_capabilities()), std::vector<OperationPlan>{f32_add_plan()});
}

TEST(BackendCapabilities_PublicRegistration, RejectShippedClasses) {
  for (CarrierClass cls : {carrier_class<Generic>(), carrier_class<CPU>()}) {
    const std::vector<OperationCapability> before = capabilities_for_carrier_class(cls);
    EXPECT_THROW_EXACTLY(register_operation_capabilities(cls, caps_of({f32_add_plan()})), TypeError);
    EXPECT_THROW_EXACTLY(register_operation_capabilities(cls, std::vector<OperationCapability>{}), TypeError);
    EXPECT_EQ(capabilities_for_carrier_class(cls), before);
  }
}

TEST(BackendCapabilities_PublicRegistration, RejectSecondDeclaration) {
  register_operation_capabilities(Custom<14>::cls(), caps_of({f32_add_plan()}));
  EXPECT_THROW_EXACTLY(register_operation_capabilities(Custom<14>::cls(), caps_of({f32_relu_plan(), i32_add_plan()})),
                       TypeError);
  EXPECT_THROW_EXACTLY(register_operation_capabilities(Custom<14>::cls(), caps_of({f32_add_plan()})), TypeError);
  EXPECT_EQ(plans_of(capabilities_for_carrier_class(Custom<14>::cls())), std::vector<OperationPlan>{f32_add_plan()});
}

TEST(BackendCapabilities_PublicRegistration, RejectObservedClass) {
  EXPECT_TRUE(capabilities_for_carrier_class(Custom<15>::cls()).empty());
  EXPECT_THROW_EXACTLY(register_operation_capabilities(Custom<15>::cls(), caps_of({f32_add_plan()})), TypeError);
  EXPECT_TRUE(capabilities_for_carrier_class(Custom<15>::cls()).empty());
}

// ============================================================ Requirement: First observation seals an undeclared independent class empty

// Each observing query answers "nothing" for an undeclared class and seals it.
TEST(BackendCapabilities_FirstObservationSeals, ObserveBeforeDeclaringWithCapabilitiesForCarrierClass) {
  EXPECT_TRUE(capabilities_for_carrier_class(Custom<20>::cls()).empty());
  EXPECT_THROW_EXACTLY(register_operation_capabilities(Custom<20>::cls(), caps_of({f32_add_plan()})), TypeError);
  EXPECT_TRUE(capabilities_for_carrier_class(Custom<20>::cls()).empty());
}

TEST(BackendCapabilities_FirstObservationSeals, ObserveBeforeDeclaringWithOperationFilter) {
  EXPECT_TRUE(capabilities_for_carrier_class(Custom<21>::cls(), "add").empty());
  EXPECT_THROW_EXACTLY(register_operation_capabilities(Custom<21>::cls(), caps_of({f32_relu_plan()})), TypeError);
  EXPECT_FALSE(supports_operation_plan(Custom<21>::cls(), f32_relu_plan()));
}

TEST(BackendCapabilities_FirstObservationSeals, ObserveBeforeDeclaringWithMatchingCapability) {
  EXPECT_EQ(matching_capability(Custom<22>::cls(), f32_add_plan()), std::nullopt);
  EXPECT_THROW_EXACTLY(register_operation_capabilities(Custom<22>::cls(), caps_of({f32_add_plan()})), TypeError);
  EXPECT_EQ(matching_capability(Custom<22>::cls(), f32_add_plan()), std::nullopt);
}

TEST(BackendCapabilities_FirstObservationSeals, ObserveBeforeDeclaringWithSupportsOperationPlan) {
  EXPECT_FALSE(supports_operation_plan(Custom<23>::cls(), f32_add_plan()));
  EXPECT_THROW_EXACTLY(register_operation_capabilities(Custom<23>::cls(), caps_of({f32_add_plan()})), TypeError);
  EXPECT_FALSE(supports_operation_plan(Custom<23>::cls(), f32_add_plan()));
}

TEST(BackendCapabilities_FirstObservationSeals, ObserveBeforeDeclaringWithUnsupportedPlanReason) {
  const std::optional<std::string> r = unsupported_plan_reason(Custom<24>::cls(), f32_add_plan());
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, Custom<24>::cls().name() + " has no capability for operation 'add'.");
  EXPECT_THROW_EXACTLY(register_operation_capabilities(Custom<24>::cls(), caps_of({f32_add_plan()})), TypeError);
  EXPECT_EQ(unsupported_plan_reason(Custom<24>::cls(), f32_add_plan()), r);
}

TEST(BackendCapabilities_FirstObservationSeals, ObserveBeforeDeclaringWithRequireCapability) {
  EXPECT_THROW_EXACTLY(require_capability(Custom<25>::cls(), f32_add_plan()), UnsupportedOperationPlan);
  EXPECT_THROW_EXACTLY(register_operation_capabilities(Custom<25>::cls(), caps_of({f32_add_plan()})), TypeError);
  EXPECT_THROW_EXACTLY(require_capability(Custom<25>::cls(), f32_add_plan()), UnsupportedOperationPlan);
}

TEST(BackendCapabilities_FirstObservationSeals, ObserveBeforeDeclaringWithDescriptorQueries) {
  EXPECT_EQ(capability(Custom<26>::cls(), "add", DType::Float32()), std::nullopt);
  EXPECT_THROW_EXACTLY(register_operation_capabilities(Custom<26>::cls(), caps_of({f32_add_plan()})), TypeError);
  EXPECT_THROW_EXACTLY(require_capability(Custom<27>::cls(), "add", DType::Float32()), UnsupportedOpDType);
  EXPECT_THROW_EXACTLY(register_operation_capabilities(Custom<27>::cls(), caps_of({f32_add_plan()})), TypeError);
}

TEST(BackendCapabilities_FirstObservationSeals, ObserveBeforeDeclaringThroughAnInstanceOrTheGate) {
  const auto c = Custom<28>::make(DType::Float32(), f32_values({1, 2}));
  EXPECT_TRUE(c->operation_capabilities().empty());
  EXPECT_THROW_EXACTLY(register_operation_capabilities(Custom<28>::cls(), caps_of({f32_add_plan()})), TypeError);
  // The gate is a class-level observation too.
  const Tensor t(Custom<29>::make(DType::Float32(), f32_values({1, 2})), Shape{2});
  EXPECT_THROW_EXACTLY(add(t, t), UnsupportedOperationPlan);
  EXPECT_THROW_EXACTLY(register_operation_capabilities(Custom<29>::cls(), caps_of({f32_add_plan()})), TypeError);
  EXPECT_THROW_EXACTLY(add(t, t), UnsupportedOperationPlan);
}

// ============================================================ Requirement: Class-level queries share one deterministic set

TEST(BackendCapabilities_ClassQueries, DeterministicOrderByStableFieldNames) {
  std::vector<OperationCapability> declared =
      caps_of({f32_relu_plan(), f32_mul_scalar_plan(), i32_add_plan(), f32_add_plan(), i32_relu_plan()});
  register_operation_capabilities(Custom<30>::cls(), declared);
  std::reverse(declared.begin(), declared.end());
  register_operation_capabilities(Custom<31>::cls(), declared);
  const std::vector<OperationPlan> expected{f32_add_plan(), i32_add_plan(), f32_mul_scalar_plan(), f32_relu_plan(),
                                            i32_relu_plan()};
  EXPECT_EQ(plans_of(capabilities_for_carrier_class(Custom<30>::cls())), expected);
  EXPECT_EQ(plans_of(capabilities_for_carrier_class(Custom<31>::cls())), expected);
  EXPECT_EQ(plans_of(capabilities_for_carrier_class(Custom<30>::cls())),
            plans_of(capabilities_for_carrier_class(Custom<30>::cls())));
  // Shipped sets are in the same order.
  for (CarrierClass cls : {carrier_class<Generic>(), carrier_class<CPU>()}) {
    const std::vector<OperationCapability> caps = capabilities_for_carrier_class(cls);
    EXPECT_TRUE(std::is_sorted(caps.begin(), caps.end()));
    for (std::size_t i = 1; i < caps.size(); ++i) EXPECT_TRUE(caps[i - 1] < caps[i]) << caps[i].to_plan().to_string();
  }
}

// The deterministic order "by stable field names" (capability.h, operator<):
// operation, operands (role, dtype name, conversion name, position by
// position, a shorter list first), compute, accumulation, accumulator,
// output; names compared as strings, absent before present. Each pair below
// differs in one field of that key only (role and dtype move together: a
// weak scalar has no dtype), or, for precedence, in two neighbouring fields
// whose orders disagree, so that dropping, reordering or comparing any field
// by something other than its name puts some pair in the wrong order.
struct OrderedPair {
  std::string field;
  OperationCapability first, second;
};

OperandCapability tensor_operand(const SimpleDType& dtype, const SimpleDType& convert_to) {
  return OperandCapability(OperandRole::TENSOR, &dtype, &convert_to);
}
OperandCapability scalar_operand(const SimpleDType& convert_to) {
  return OperandCapability(OperandRole::WEAK_SCALAR, nullptr, &convert_to);
}
OperationCapability record(std::string operation, std::vector<OperandCapability> operands,
                           Arithmetic compute = Arithmetic::BINARY32,
                           std::optional<Accumulation> accumulation = std::nullopt,
                           const SimpleDType* accumulator = nullptr, const SimpleDType& output = DType::Float32()) {
  return OperationCapability(std::move(operation), std::move(operands), compute, accumulation, accumulator, &output);
}

std::vector<OrderedPair> ordered_pairs() {
  const SimpleDType &f32 = DType::Float32(), &i32 = DType::Int32(), &b = DType::Bool(), &f64 = DType::Float64();
  const OperandCapability ff = tensor_operand(f32, f32);
  const Arithmetic bin = Arithmetic::BINARY32;
  return {
      {"operation", record("add", {ff}), record("sub", {ff})},
      {"operand count", record("add", {ff}), record("add", {ff, ff})},
      // "tensor" < "weak_scalar"; by dtype alone the absent one would lead.
      {"operand role", record("add", {ff, ff}), record("add", {ff, scalar_operand(f32)})},
      {"operand dtype", record("add", {tensor_operand(b, f32)}), record("add", {tensor_operand(i32, f32)})},
      {"operand conversion", record("add", {tensor_operand(i32, f32)}), record("add", {tensor_operand(i32, i32)})},
      {"later operand", record("add", {ff, tensor_operand(b, f32)}), record("add", {ff, tensor_operand(i32, f32)})},
      {"compute", record("add", {ff}, bin), record("add", {ff}, Arithmetic::BINARY32_FUSED)},
      // By name "int32_exact" < "int32_exact_checked"; the enum declares them
      // the other way round.
      {"compute name", record("add", {ff}, Arithmetic::INT32_EXACT),
       record("add", {ff}, Arithmetic::INT32_EXACT_CHECKED)},
      {"accumulation presence", record("add", {ff}, bin), record("add", {ff}, bin, Accumulation::FLOATING)},
      // "exact_integer" < "floating"; the enum declares FLOATING first.
      {"accumulation name", record("add", {ff}, bin, Accumulation::EXACT_INTEGER),
       record("add", {ff}, bin, Accumulation::FLOATING)},
      {"accumulator presence", record("add", {ff}, bin, Accumulation::FLOATING),
       record("add", {ff}, bin, Accumulation::FLOATING, &f32)},
      {"accumulator name", record("add", {ff}, bin, Accumulation::FLOATING, &f32),
       record("add", {ff}, bin, Accumulation::FLOATING, &f64)},
      {"output", record("add", {ff}, bin, std::nullopt, nullptr, f32),
       record("add", {ff}, bin, std::nullopt, nullptr, i32)},
      {"output name", record("add", {ff}, bin, std::nullopt, nullptr, b),
       record("add", {ff}, bin, std::nullopt, nullptr, f32)},
      // Precedence: the earlier field decides although the later disagrees.
      {"operation before operands", record("add", {tensor_operand(i32, i32)}), record("sub", {tensor_operand(b, b)})},
      {"operands before compute", record("add", {tensor_operand(b, b)}, Arithmetic::INT32_EXACT),
       record("add", {tensor_operand(i32, i32)}, bin)},
      {"compute before accumulation", record("add", {ff}, bin, Accumulation::FLOATING),
       record("add", {ff}, Arithmetic::INT32_EXACT)},
      {"accumulation before accumulator", record("add", {ff}, bin, std::nullopt, &f64),
       record("add", {ff}, bin, Accumulation::FLOATING)},
      {"accumulator before output", record("add", {ff}, bin, Accumulation::FLOATING, nullptr, i32),
       record("add", {ff}, bin, Accumulation::FLOATING, &f32, b)},
  };
}

template <int... I>
std::vector<CarrierClass> order_test_classes(std::integer_sequence<int, I...>) {
  return {Custom<60 + I>::cls()...};
}

TEST(BackendCapabilities_ClassQueries, DeterministicOrderComparesEveryFieldOfTheKey) {
  const std::vector<OrderedPair> pairs = ordered_pairs();
  const std::vector<CarrierClass> classes = order_test_classes(std::make_integer_sequence<int, 20>{});
  ASSERT_LE(pairs.size(), classes.size());
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const OrderedPair& p = pairs[i];
    SCOPED_TRACE(p.field + ": " + p.first.to_plan().to_string() + " before " + p.second.to_plan().to_string());
    ASSERT_FALSE(p.first == p.second);
    EXPECT_TRUE(p.first < p.second);
    EXPECT_FALSE(p.second < p.first);
    // The class enumeration and a dependent snapshot, declared in the
    // opposite order, answer in this order.
    register_operation_capabilities(classes[i], std::vector<OperationCapability>{p.second, p.first});
    const std::vector<OperationCapability> expected{p.first, p.second};
    EXPECT_EQ(capabilities_for_carrier_class(classes[i]), expected);
    const std::vector<OperationCapability> reversed{p.second, p.first};
    const auto d = std::make_shared<TestDependent>([reversed] { return reversed; }, true);
    EXPECT_EQ(d->operation_capabilities(), expected);
  }
}

TEST(BackendCapabilities_ClassQueries, RestrictClassEnumerationByOperation) {
  register_operation_capabilities(
      Custom<32>::cls(), caps_of({f32_relu_plan(), i32_add_plan(), f32_mul_scalar_plan(), f32_add_plan(), i32_relu_plan()}));
  EXPECT_EQ(plans_of(capabilities_for_carrier_class(Custom<32>::cls(), "add")),
            (std::vector<OperationPlan>{f32_add_plan(), i32_add_plan()}));
  EXPECT_EQ(plans_of(capabilities_for_carrier_class(Custom<32>::cls(), "relu")),
            (std::vector<OperationPlan>{f32_relu_plan(), i32_relu_plan()}));
  EXPECT_TRUE(capabilities_for_carrier_class(Custom<32>::cls(), "sub").empty());
  EXPECT_TRUE(capabilities_for_carrier_class(Custom<32>::cls(), "ad").empty());
  // Shipped classes: the filtered tuple is the full tuple's subsequence.
  for (CarrierClass cls : {carrier_class<Generic>(), carrier_class<CPU>()}) {
    const std::vector<OperationCapability> all = capabilities_for_carrier_class(cls);
    std::set<std::string> names;
    for (const OperationCapability& c : all) names.insert(c.operation());
    std::size_t total = 0;
    for (const std::string& name : names) {
      std::vector<OperationCapability> expected;
      for (const OperationCapability& c : all)
        if (c.operation() == name) expected.push_back(c);
      EXPECT_EQ(capabilities_for_carrier_class(cls, name), expected) << name;
      total += expected.size();
    }
    EXPECT_EQ(total, all.size());
    EXPECT_EQ(capabilities_for_carrier_class(cls, std::nullopt), all);
  }
}

// backend-capabilities.md (exact matching) across the gate's two lookups: a
// class with few capabilities for an operation is matched field by field, a
// larger one (many operations, or many capabilities for one) by plan hash;
// both admit exactly the declared plans and refuse every near miss, with the
// same sentences.
TEST(BackendCapabilities_CapabilitiesMatchPlans, DirectAndHashedLookupsAgree) {
  std::map<std::string, std::vector<OperationPlan>> by_op;
  for (const OperationPlan& p : resolvable_plans()) by_op[p.operation()].push_back(p);
  std::vector<OperationPlan> small, large;  // small: <= 4 per operation, few operations; large: everything
  for (const auto& [op, plans] : by_op) {
    for (std::size_t i = 0; i < plans.size() && i < 4 && small.size() < 12; ++i) small.push_back(plans[i]);
    large.insert(large.end(), plans.begin(), plans.end());
  }
  ASSERT_GT(by_op.size(), 16u);  // the large class exceeds the direct lookup's operation count
  const auto check = [](CarrierClass cls, const std::vector<OperationPlan>& declared) {
    std::vector<OperationCapability> caps;
    for (const OperationPlan& p : declared) caps.push_back(OperationCapability::from_plan(p));
    register_operation_capabilities(cls, caps);
    std::unordered_set<OperationPlan> set(declared.begin(), declared.end());
    for (const OperationPlan& p : declared) {
      EXPECT_TRUE(supports_operation_plan(cls, p)) << p.to_string();
      EXPECT_EQ(require_capability(cls, p), OperationCapability::from_plan(p));
      for (const auto& [field, variant] : near_misses(p)) {
        EXPECT_EQ(supports_operation_plan(cls, variant), set.count(variant) == 1) << field << ": " << variant.to_string();
        if (!set.count(variant)) {
          EXPECT_THROW_EXACTLY(require_capability(cls, variant), UnsupportedOperationPlan);
        }
      }
    }
    const OperationPlan unknown("no_such_operation", {OperandPlan::tensor(DType::Float32())}, Arithmetic::BINARY32,
                                std::nullopt, nullptr, DType::Float32());
    EXPECT_EQ(unsupported_plan_reason(cls, unknown),
              std::optional<std::string>(cls.name() + " has no capability for operation 'no_such_operation'."));
  };
  check(Custom<1200>::cls(), small);
  check(Custom<1201>::cls(), large);
  // One operation with more than four capabilities: few operations, but that
  // operation's run is looked up by hash.
  const auto widest = std::max_element(by_op.begin(), by_op.end(),
                                       [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  ASSERT_GT(widest->second.size(), 4u);
  check(Custom<1202>::cls(), widest->second);
}

TEST(BackendCapabilities_ClassQueries, QueriesShareOneStoredSet) {
  for (CarrierClass cls : {carrier_class<Generic>(), carrier_class<CPU>()}) {
    const std::vector<OperationCapability> all = capabilities_for_carrier_class(cls);
    for (const OperationCapability& c : all) {
      const OperationPlan p = c.to_plan();
      EXPECT_EQ(matching_capability(cls, p), std::optional<OperationCapability>(c));
      EXPECT_TRUE(supports_operation_plan(cls, p));
      EXPECT_EQ(unsupported_plan_reason(cls, p), std::nullopt);
      EXPECT_EQ(require_capability(cls, p), c);
    }
    // Unsupported: the five answers agree.
    for (const OperationPlan& p : {OperationPlan("caps_test_unknown", {OperandPlan::tensor(DType::Float32())},
                                                 Arithmetic::BINARY32, std::nullopt, nullptr, DType::Float32()),
                                   OperationPlan("add", {OperandPlan::tensor(DType::Bool()), OperandPlan::tensor(DType::Bool())},
                                                 Arithmetic::BINARY32, std::nullopt, nullptr, DType::Bool())}) {
      EXPECT_EQ(matching_capability(cls, p), std::nullopt);
      EXPECT_FALSE(supports_operation_plan(cls, p));
      const std::optional<std::string> r = unsupported_plan_reason(cls, p);
      ASSERT_TRUE(r.has_value());
      try {
        require_capability(cls, p);
        ADD_FAILURE() << "require_capability accepted " << p.to_string();
      } catch (const UnsupportedOperationPlan& e) {
        EXPECT_ERROR_TYPE_IS(e, UnsupportedOperationPlan);
        EXPECT_EQ(std::string(e.what()), *r);
        ASSERT_TRUE(e.plan().has_value());
        EXPECT_EQ(*e.plan(), p);
      }
    }
  }
}

TEST(BackendCapabilities_ClassQueries, ReasonForNoCapabilityIsStableSentence) {
  const OperationPlan p("caps_test_unknown", {OperandPlan::tensor(DType::Float32())}, Arithmetic::BINARY32, std::nullopt,
                        nullptr, DType::Float32());
  EXPECT_EQ(unsupported_plan_reason(carrier_class<Generic>(), p),
            std::optional<std::string>("Generic has no capability for operation 'caps_test_unknown'."));
  EXPECT_EQ(unsupported_plan_reason(carrier_class<CPU>(), p),
            std::optional<std::string>("CPU has no capability for operation 'caps_test_unknown'."));
}

TEST(BackendCapabilities_ClassQueries, RequireUnsupportedShape) {
  const OperationPlan p("add", {OperandPlan::tensor(DType::Bool()), OperandPlan::tensor(DType::Bool())},
                        Arithmetic::BINARY32, std::nullopt, nullptr, DType::Bool());
  const std::string expected =
      "Generic has capabilities for operation 'add' but none matches the plan add(tensor:bool->bool, "
      "tensor:bool->bool) compute=BINARY32 accumulation=None accumulator=None -> bool.";
  EXPECT_EQ(unsupported_plan_reason(carrier_class<Generic>(), p), std::optional<std::string>(expected));
  EXPECT_THROW_EXACTLY(require_capability(carrier_class<Generic>(), p), UnsupportedOperationPlan);
  try {
    require_capability(carrier_class<Generic>(), p);
  } catch (const NotImplementedError& e) {  // UnsupportedOperationPlan is a NotImplementedError
    EXPECT_EQ(std::string(e.what()), expected);
    EXPECT_STREQ(e.type_name(), "UnsupportedOperationPlan");
  }
  static_assert(std::is_base_of_v<NotImplementedError, UnsupportedOperationPlan>);
}

TEST(BackendCapabilities_ClassQueries, RejectNonCarrierClass) {
  const CarrierClass bad = carrier_class<int>();
  EXPECT_THROW_EXACTLY(capabilities_for_carrier_class(bad), TypeError);
  EXPECT_THROW_EXACTLY(capabilities_for_carrier_class(bad, "add"), TypeError);
  EXPECT_THROW_EXACTLY(matching_capability(bad, f32_add_plan()), TypeError);
  EXPECT_THROW_EXACTLY(supports_operation_plan(bad, f32_add_plan()), TypeError);
  EXPECT_THROW_EXACTLY(unsupported_plan_reason(bad, f32_add_plan()), TypeError);
  EXPECT_THROW_EXACTLY(require_capability(bad, f32_add_plan()), TypeError);
  EXPECT_THROW_EXACTLY(capability(bad, "add", DType::Float32()), TypeError);
  EXPECT_THROW_EXACTLY(require_capability(bad, "add", DType::Float32()), TypeError);
}

TEST(BackendCapabilities_ClassQueries, RejectDependentCarrierClass) {
  for (CarrierClass cls : {carrier_class<TestDependent>(), carrier_class<DependentCarrier>()}) {
    EXPECT_THROW_EXACTLY(capabilities_for_carrier_class(cls), TypeError);
    EXPECT_THROW_EXACTLY(capabilities_for_carrier_class(cls, "add"), TypeError);
    EXPECT_THROW_EXACTLY(matching_capability(cls, f32_add_plan()), TypeError);
    EXPECT_THROW_EXACTLY(supports_operation_plan(cls, f32_add_plan()), TypeError);
    EXPECT_THROW_EXACTLY(unsupported_plan_reason(cls, f32_add_plan()), TypeError);
    EXPECT_THROW_EXACTLY(require_capability(cls, f32_add_plan()), TypeError);
    EXPECT_THROW_EXACTLY(capability(cls, "add", DType::Float32()), TypeError);
    EXPECT_THROW_EXACTLY(require_capability(cls, "add", DType::Float32()), TypeError);
  }
}

// ============================================================ Requirement: Carrier queries select the correct ownership model

TEST(BackendCapabilities_CarrierQueries, QueryFloat32CpuForInt32Plans) {
  const auto cpu = CPU::create(3, DType::Float32());
  const std::vector<OperationCapability> caps = cpu->operation_capabilities();
  const std::unordered_set<OperationPlan> plans = plan_set(plans_of(caps));
  EXPECT_EQ(plans.count(i32_add_plan()), 1u);
  EXPECT_EQ(plans.count(i32_relu_plan()), 1u);
  EXPECT_EQ(plans.count(resolve_operation_plan("reduce_sum", {DType::Int32()})), 1u);
  EXPECT_TRUE(cpu->supports_operation_plan(i32_add_plan()));
  EXPECT_EQ(cpu->unsupported_plan_reason(i32_add_plan()), std::nullopt);
  EXPECT_TRUE(cpu->require_operation_plan(i32_add_plan()).matches(i32_add_plan()));
  EXPECT_EQ(caps, capabilities_for_carrier_class(carrier_class<CPU>()));
  EXPECT_EQ(plans_of(cpu->operation_capabilities("relu")), (std::vector<OperationPlan>{f32_relu_plan(), i32_relu_plan()}));
  EXPECT_EQ(cpu->operation_capabilities("relu"), capabilities_for_carrier_class(carrier_class<CPU>(), "relu"));
}

TEST(BackendCapabilities_CarrierQueries, NonPlanArgumentsAreRejectedAtCompileTime) {
  // The C++ spelling of "another value than an OperationPlan / a class where
  // an instance is required fails with TypeError".
  static_assert(!std::is_invocable_v<decltype(&Carrier::supports_operation_plan), const Carrier&, int>);
  static_assert(!std::is_invocable_v<decltype(&Carrier::require_operation_plan), const Carrier&, OperationCapability>);
  static_assert(!std::is_invocable_v<decltype(&Carrier::unsupported_plan_reason), const Carrier&, std::string>);
  static_assert(!std::is_invocable_v<decltype(&Carrier::operation_capabilities), CarrierClass, std::nullopt_t>);
  static_assert(std::is_invocable_v<decltype(&Carrier::supports_operation_plan), const Carrier&, OperationPlan>);
  SUCCEED();
}

TEST(BackendCapabilities_CarrierQueries, IgnoreDtypeSizeMutabilityAndReleaseState) {
  const std::vector<OperationCapability> reference = capabilities_for_carrier_class(carrier_class<CPU>());
  std::vector<std::shared_ptr<Carrier>> carriers{CPU::create(0, DType::Int32()), CPU::create(5, DType::Bool(), false),
                                                 CPU::create(2, DType::Float32())};
  carriers.back()->release();
  ASSERT_TRUE(carriers.back()->is_released());
  for (const auto& c : carriers) {
    EXPECT_EQ(c->operation_capabilities(), reference);
    EXPECT_TRUE(c->supports_operation_plan(f32_add_plan()));
    EXPECT_TRUE(c->supports_operation_plan(i32_add_plan()));
    EXPECT_EQ(c->require_operation_plan(f32_relu_plan()).to_plan(), f32_relu_plan());
  }
  const std::vector<Value> one{Value::from_bool(true)};
  const auto g = Generic::create(one, DType::Bool(), false);
  g->release();
  EXPECT_EQ(g->operation_capabilities(), capabilities_for_carrier_class(carrier_class<Generic>()));
  EXPECT_TRUE(g->supports_operation_plan(i32_add_plan()));
}

TEST(BackendCapabilities_CarrierQueries, InstanceReasonAndRequirement) {
  const auto g = Generic::zeros(2, DType::Float32());
  const OperationPlan p("caps_test_unknown", {OperandPlan::tensor(DType::Float32())}, Arithmetic::BINARY32, std::nullopt,
                        nullptr, DType::Float32());
  EXPECT_EQ(g->unsupported_plan_reason(p),
            std::optional<std::string>("Generic has no capability for operation 'caps_test_unknown'."));
  EXPECT_FALSE(g->supports_operation_plan(p));
  EXPECT_THROW_EXACTLY(g->require_operation_plan(p), UnsupportedOperationPlan);
  const OperationPlan near("relu", {OperandPlan::tensor(DType::Bool())}, Arithmetic::BINARY32, std::nullopt, nullptr,
                           DType::Bool());
  EXPECT_EQ(g->unsupported_plan_reason(near), unsupported_plan_reason(carrier_class<Generic>(), near));
  EXPECT_THROW_EXACTLY(g->require_operation_plan(near), UnsupportedOperationPlan);
}

TEST(BackendCapabilities_CarrierQueries, IndependentInstanceReadsItsExactClassDeclaration) {
  register_operation_capabilities(Custom<44>::cls(), caps_of({f32_add_plan()}));
  const auto c = Custom<44>::make(DType::Int32(), i32_values({1}));
  EXPECT_EQ(plans_of(c->operation_capabilities()), std::vector<OperationPlan>{f32_add_plan()});
  EXPECT_TRUE(c->supports_operation_plan(f32_add_plan()));
  EXPECT_EQ(c->require_operation_plan(f32_add_plan()), require_capability(Custom<44>::cls(), f32_add_plan()));
  // The instance's sentences name the carrier by its public class_name(); the
  // class-level sentence (no instance) by the class's registry name.
  EXPECT_EQ(c->unsupported_plan_reason(f32_relu_plan()),
            std::optional<std::string>(Custom<44>::cls().name() + " has no capability for operation 'relu'."));
  EXPECT_EQ(c->unsupported_plan_reason(i32_add_plan()),
            std::optional<std::string>(Custom<44>::cls().name() + " has capabilities for operation 'add' but none matches the plan " +
                                       i32_add_plan().to_string() + "."));
  EXPECT_EQ(unsupported_plan_reason(Custom<44>::cls(), f32_relu_plan()),
            std::optional<std::string>(Custom<44>::cls().name() +
                                       " has no capability for operation 'relu'."));
  try {
    c->require_operation_plan(i32_add_plan());
    ADD_FAILURE() << "require_operation_plan accepted an undeclared plan";
  } catch (const UnsupportedOperationPlan& e) {
    EXPECT_ERROR_TYPE_IS(e, UnsupportedOperationPlan);
    EXPECT_EQ(std::string(e.what()), *c->unsupported_plan_reason(i32_add_plan()));
  }
}

TEST(BackendCapabilities_CarrierQueries, DependentInstanceReadsItsSnapshot) {
  const auto d = std::make_shared<TestDependent>([] { return caps_of({f32_relu_plan(), f32_add_plan()}); }, true);
  EXPECT_EQ(plans_of(d->operation_capabilities()), (std::vector<OperationPlan>{f32_add_plan(), f32_relu_plan()}));
  EXPECT_EQ(plans_of(d->operation_capabilities("relu")), std::vector<OperationPlan>{f32_relu_plan()});
  EXPECT_TRUE(d->supports_operation_plan(f32_add_plan()));
  EXPECT_FALSE(d->supports_operation_plan(i32_add_plan()));
  EXPECT_EQ(d->unsupported_plan_reason(f32_add_plan()), std::nullopt);
  EXPECT_EQ(d->unsupported_plan_reason(f32_mul_scalar_plan()),
            std::optional<std::string>(carrier_class<TestDependent>().name() + " has no capability for operation 'mul'."));
  EXPECT_EQ(d->unsupported_plan_reason(i32_add_plan()),
            std::optional<std::string>(carrier_class<TestDependent>().name() + " has capabilities for operation 'add' but none matches the plan " +
                                       i32_add_plan().to_string() + "."));
  EXPECT_EQ(d->require_operation_plan(f32_relu_plan()).to_plan(), f32_relu_plan());
  EXPECT_THROW_EXACTLY(d->require_operation_plan(i32_add_plan()), UnsupportedOperationPlan);
  EXPECT_TRUE(d->exact_class().traits().is_dependent);
  // Release does not change the snapshot.
  d->release();
  EXPECT_EQ(plans_of(d->operation_capabilities()), (std::vector<OperationPlan>{f32_add_plan(), f32_relu_plan()}));
}

// ============================================================ Requirement: Unsupported plans fail before execution work

TEST(BackendCapabilities_UnsupportedPlansFailBeforeExecution, GateBackendExecution) {
  const auto c = Custom<40>::make(DType::Float32(), f32_values({1, 2, 3}));
  const Tensor t(c, Shape{3});
  Custom<40>::allocations = 0;
  try {
    add(t, t);
    ADD_FAILURE() << "add executed on an undeclared class";
  } catch (const UnsupportedOperationPlan& e) {
    EXPECT_ERROR_TYPE_IS(e, UnsupportedOperationPlan);
    ASSERT_TRUE(e.plan().has_value());
    EXPECT_EQ(*e.plan(), f32_add_plan());
    // The gate's sentence names the executing carrier by its public name.
    EXPECT_EQ(std::string(e.what()), Custom<40>::cls().name() + " has no capability for operation 'add'.");
  }
  EXPECT_THROW_EXACTLY(relu(t), UnsupportedOperationPlan);
  EXPECT_THROW_EXACTLY(reduce_sum(t), UnsupportedOperationPlan);
  EXPECT_THROW_EXACTLY(mul(t, 2), UnsupportedOperationPlan);
  EXPECT_EQ(Custom<40>::allocations.load(), 0);
  EXPECT_EQ(c->version(), 0u);
}

TEST(BackendCapabilities_UnsupportedPlansFailBeforeExecution, GateRefusesNearbyShape) {
  // The class executes add(Float32, Float32) only; add(Int32, Int32) is refused
  // rather than rewritten to a nearby supported shape.
  register_operation_capabilities(Custom<41>::cls(), caps_of({f32_add_plan()}));
  const Tensor t(Custom<41>::make(DType::Int32(), i32_values({1, 2})), Shape{2});
  Custom<41>::allocations = 0;
  try {
    add(t, t);
    ADD_FAILURE() << "a nearby shape executed";
  } catch (const UnsupportedOperationPlan& e) {
    EXPECT_ERROR_TYPE_IS(e, UnsupportedOperationPlan);
    EXPECT_EQ(std::string(e.what()),
              Custom<41>::cls().name() + " has capabilities for operation 'add' but none matches the plan add(tensor:int32->int32, "
              "tensor:int32->int32) compute=INT32_EXACT_CHECKED accumulation=None accumulator=None -> int32.");
  }
  EXPECT_EQ(Custom<41>::allocations.load(), 0);
}

TEST(BackendCapabilities_UnsupportedPlansFailBeforeExecution, DeclaredCapabilityWithoutKernelRaisesWithoutAllocating) {
  // carrier-extension R13.1: a declared plan passes the gate; a class whose
  // dispatch hook supplies no implementation is UnsupportedOperationPlan
  // saying so (never a plain NotImplementedError), before any allocation.
  register_operation_capabilities(Custom<42>::cls(), caps_of({f32_add_plan()}));
  const Tensor t(Custom<42>::make(DType::Float32(), f32_values({1, 2})), Shape{2});
  Custom<42>::allocations = 0;
  try {
    add(t, t);
    ADD_FAILURE() << "expected UnsupportedOperationPlan";
  } catch (const UnsupportedOperationPlan& e) {
    EXPECT_NE(std::string(e.what()).find("dispatch hook"), std::string::npos) << e.what();
  }
  EXPECT_EQ(Custom<42>::allocations.load(), 0);
}

TEST(BackendCapabilities_UnsupportedPlansFailBeforeExecution, GateWithCallerOutputTouchesNothing) {
  const auto c = Custom<43>::make(DType::Float32(), f32_values({1, 2}));
  const auto o = Custom<43>::make(DType::Float32(), f32_values({7, 8}));
  const Tensor t(c, Shape{2}), out(o, Shape{2});
  Custom<43>::allocations = 0;
  EXPECT_THROW_EXACTLY(add(t, t, into(out)), UnsupportedOperationPlan);
  EXPECT_THROW_EXACTLY(add(t, t, accumulate_into(out)), UnsupportedOperationPlan);
  EXPECT_EQ(Custom<43>::allocations.load(), 0);
  EXPECT_EQ(o->version(), 0u);
  EXPECT_EQ(o->get_value(0), Value::from_float32(7));
  EXPECT_EQ(o->get_value(1), Value::from_float32(8));
}

TEST(BackendCapabilities_UnsupportedPlansFailBeforeExecution, GateOnDependentInstance) {
  const auto d = std::make_shared<TestDependent>([] { return caps_of({f32_relu_plan()}); }, true);
  const Tensor t(d, Shape{4});
  TestDependent::allocations = 0;
  EXPECT_THROW_EXACTLY(add(t, t), UnsupportedOperationPlan);
  // A plan in the snapshot passes the gate; the class's dispatch hook
  // supplies no kernel for it (carrier-extension R13.1).
  EXPECT_THROW_EXACTLY(relu(t), UnsupportedOperationPlan);
  EXPECT_EQ(TestDependent::allocations.load(), 0);
}

// ============================================================ Requirement: Shipped carrier declarations are complete and sealed

void expect_declaration_equals_kernel_table(CarrierClass cls, const char* name) {
  const KernelTable* table = kernel_table(cls);
  ASSERT_NE(table, nullptr) << name;
  const std::vector<OperationCapability> caps = capabilities_for_carrier_class(cls);
  EXPECT_EQ(caps.size(), table->plans().size()) << name;
  EXPECT_EQ(plan_set(plans_of(caps)), plan_set(table->plans())) << name;
  for (const OperationCapability& c : caps) {
    const OperationPlan p = c.to_plan();
    ASSERT_NE(table->find(p), nullptr) << p.to_string();
    EXPECT_EQ(execution_axes(cls, c), table->axes(p)) << p.to_string();
  }
  EXPECT_EQ(cls.name(), name);
}

TEST(BackendCapabilities_ShippedDeclarations, GenericSetEqualsItsKernelTable) {
  expect_declaration_equals_kernel_table(carrier_class<Generic>(), "Generic");
}

TEST(BackendCapabilities_ShippedDeclarations, CpuSetEqualsItsKernelTable) {
  expect_declaration_equals_kernel_table(carrier_class<CPU>(), "CPU");
}

TEST(BackendCapabilities_ShippedDeclarations, ShippedClassesStaySealed) {
  for (CarrierClass cls : {carrier_class<Generic>(), carrier_class<CPU>()}) {
    const std::vector<OperationCapability> before = capabilities_for_carrier_class(cls);
    ASSERT_FALSE(before.empty());
    EXPECT_THROW_EXACTLY(register_operation_capabilities(cls, before), TypeError);
    EXPECT_THROW_EXACTLY(register_operation_capabilities(cls, caps_of({f32_add_plan()})), TypeError);
    EXPECT_EQ(capabilities_for_carrier_class(cls), before);
  }
}

// ============================================================ Requirement: DependentCarrier owns capabilities per finalized instance

TEST(BackendCapabilities_DependentCarrier, FreezeTwoDifferentDependentInstances) {
  const auto a = std::make_shared<TestDependent>([] { return caps_of({f32_add_plan()}); }, true);
  const auto b = std::make_shared<TestDependent>([] { return caps_of({i32_relu_plan(), f32_relu_plan()}); }, true);
  EXPECT_EQ(a->exact_class(), b->exact_class());
  EXPECT_EQ(plans_of(a->operation_capabilities()), std::vector<OperationPlan>{f32_add_plan()});
  EXPECT_EQ(plans_of(b->operation_capabilities()), (std::vector<OperationPlan>{f32_relu_plan(), i32_relu_plan()}));
  EXPECT_TRUE(a->supports_operation_plan(f32_add_plan()));
  EXPECT_FALSE(b->supports_operation_plan(f32_add_plan()));
  EXPECT_FALSE(a->supports_operation_plan(f32_relu_plan()));
  // The snapshot is frozen: the generator ran once and is not consulted again.
  EXPECT_EQ(a->generator_calls(), 1);
  a->set_generator([] { return caps_of({i32_add_plan()}); });
  EXPECT_EQ(plans_of(a->operation_capabilities()), std::vector<OperationPlan>{f32_add_plan()});
  EXPECT_EQ(a->generator_calls(), 1);
}

TEST(BackendCapabilities_DependentCarrier, SnapshotIsSortedDeterministically) {
  const auto d = std::make_shared<TestDependent>(
      [] { return caps_of({i32_relu_plan(), f32_relu_plan(), f32_mul_scalar_plan(), i32_add_plan(), f32_add_plan()}); },
      true);
  const std::vector<OperationPlan> expected{f32_add_plan(), i32_add_plan(), f32_mul_scalar_plan(), f32_relu_plan(),
                                            i32_relu_plan()};
  EXPECT_EQ(plans_of(d->capability_snapshot()), expected);
  EXPECT_EQ(plans_of(d->operation_capabilities()), expected);
  EXPECT_TRUE(d->is_capability_finalized());
}

TEST(BackendCapabilities_DependentCarrier, QueriesBeforeFinalizationRaiseRuntimeError) {
  const auto d = std::make_shared<TestDependent>([] { return caps_of({f32_add_plan()}); }, false);
  EXPECT_FALSE(d->is_capability_finalized());
  EXPECT_THROW_EXACTLY(d->operation_capabilities(), RuntimeError);
  EXPECT_THROW_EXACTLY(d->operation_capabilities("add"), RuntimeError);
  EXPECT_THROW_EXACTLY(d->supports_operation_plan(f32_add_plan()), RuntimeError);
  EXPECT_THROW_EXACTLY(d->unsupported_plan_reason(f32_add_plan()), RuntimeError);
  EXPECT_THROW_EXACTLY(d->require_operation_plan(f32_add_plan()), RuntimeError);
  EXPECT_THROW_EXACTLY(d->capability_snapshot(), RuntimeError);
  EXPECT_EQ(d->generator_calls(), 0);
  d->finalize();
  EXPECT_EQ(plans_of(d->operation_capabilities()), std::vector<OperationPlan>{f32_add_plan()});
}

TEST(BackendCapabilities_DependentCarrier, SecondFinalizationRaisesAndKeepsFirstSnapshot) {
  const auto d = std::make_shared<TestDependent>([] { return caps_of({f32_add_plan()}); }, true);
  d->set_generator([] { return caps_of({i32_add_plan(), i32_relu_plan()}); });
  EXPECT_THROW_EXACTLY(d->finalize(), RuntimeError);
  EXPECT_EQ(plans_of(d->operation_capabilities()), std::vector<OperationPlan>{f32_add_plan()});
  EXPECT_EQ(d->generator_calls(), 1);
}

// Shared by the three atomic-failure tests: nothing published, queries still
// report an unfinalised instance, and (no partial state, cpp-mapping.md) a
// later valid finalisation succeeds.
void expect_unfinalized_then_recoverable(TestDependent& d) {
  EXPECT_FALSE(d.is_capability_finalized());
  EXPECT_THROW_EXACTLY(d.operation_capabilities(), RuntimeError);
  EXPECT_THROW_EXACTLY(d.supports_operation_plan(f32_add_plan()), RuntimeError);
  EXPECT_THROW_EXACTLY(d.unsupported_plan_reason(f32_add_plan()), RuntimeError);
  EXPECT_THROW_EXACTLY(d.require_operation_plan(f32_add_plan()), RuntimeError);
  EXPECT_THROW_EXACTLY(d.capability_snapshot(), RuntimeError);
  d.set_generator([] { return caps_of({f32_relu_plan()}); });
  d.finalize();
  EXPECT_EQ(plans_of(d.operation_capabilities()), std::vector<OperationPlan>{f32_relu_plan()});
}

TEST(BackendCapabilities_DependentCarrier, FailGenerationAtomicallyWhenGeneratorRaises) {
  const auto d = std::make_shared<TestDependent>(
      []() -> std::vector<OperationCapability> { throw ValueError("TestDependent: the composed carrier is gone"); },
      false);
  EXPECT_THROW_EXACTLY(d->finalize(), ValueError);
  expect_unfinalized_then_recoverable(*d);
}

// "Yields an invalid entry" (with_moved_from_entry): refused, after valid
// entries, with TypeError; nothing is published.
TEST(BackendCapabilities_DependentCarrier, FailGenerationAtomicallyOnInvalidEntry) {
  const auto d = std::make_shared<TestDependent>(&with_moved_from_entry, false);
  const std::string message = EXACT_ERROR_MESSAGE(d->finalize(), TypeError);
  EXPECT_NE(message.find("entry 1"), std::string::npos) << message;
  EXPECT_EQ(d->generator_calls(), 1);
  expect_unfinalized_then_recoverable(*d);
  // A constructor that finalises publishes no instance at all.
  EXPECT_THROW_EXACTLY(TestDependent(&with_moved_from_entry, true), TypeError);
}

TEST(BackendCapabilities_DependentCarrier, FailGenerationAtomicallyOnRepeatedShape) {
  const auto d = std::make_shared<TestDependent>(
      [] { return caps_of({f32_add_plan(), f32_relu_plan(), f32_add_plan()}); }, false);
  EXPECT_THROW_EXACTLY(d->finalize(), ValueError);
  expect_unfinalized_then_recoverable(*d);
  // A failing constructor publishes no instance at all.
  EXPECT_THROW_EXACTLY(TestDependent([] { return caps_of({i32_add_plan(), i32_add_plan()}); }, true), ValueError);
}

TEST(BackendCapabilities_DependentCarrier, LegacyBaseGeneratorRaisesNotImplementedError) {
  DependentWithoutGenerator d;
  EXPECT_THROW_EXACTLY(d.finalize(), NotImplementedError);
  EXPECT_FALSE(d.is_capability_finalized());
  EXPECT_THROW_EXACTLY(d.operation_capabilities(), RuntimeError);
}

TEST(BackendCapabilities_DependentCarrier, EmptySnapshotIsValid) {
  const auto d = std::make_shared<TestDependent>([] { return std::vector<OperationCapability>{}; }, true);
  EXPECT_TRUE(d->is_capability_finalized());
  EXPECT_TRUE(d->operation_capabilities().empty());
  EXPECT_EQ(d->unsupported_plan_reason(f32_add_plan()),
            std::optional<std::string>(carrier_class<TestDependent>().name() + " has no capability for operation 'add'."));
}

TEST(BackendCapabilities_DependentCarrier, DependentClassRejectedByClassLevelRegistrationAndQueries) {
  const auto d = std::make_shared<TestDependent>([] { return caps_of({f32_add_plan()}); }, true);
  EXPECT_THROW_EXACTLY(register_operation_capabilities(d->exact_class(), caps_of({f32_relu_plan()})), TypeError);
  EXPECT_THROW_EXACTLY(capabilities_for_carrier_class(d->exact_class()), TypeError);
  EXPECT_THROW_EXACTLY(supports_operation_plan(d->exact_class(), f32_add_plan()), TypeError);
  EXPECT_THROW_EXACTLY(require_capability(d->exact_class(), f32_add_plan()), TypeError);
  EXPECT_EQ(plans_of(d->operation_capabilities()), std::vector<OperationPlan>{f32_add_plan()});
}

}  // namespace
}  // namespace sw_caps
