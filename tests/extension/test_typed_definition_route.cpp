// Typed functions on definition-backed carriers (issue 11 step 4: "Definition-
// free carriers enter the same front and leave it at their kernel table";
// carrier-extension R11.3-R11.5; docs/extension.md, "Typed functions on
// definition-backed carriers"): a typed C++ function or operator whose
// operands live on a definition-backed carrier runs the built-in's
// OperationDefinition through the definition-backed pipeline, so its result
// is the one calling by definition gives; and the built-in VJPs, written with
// the typed functions, run there too (operation-semantics.md, "Automatic
// differentiation belongs to the semantic definition").
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include "execution/kernel_table.h"
#include "extension/registry.h"
#include "policy/resolution_probe.h"
#include "storage/gate.h"
#include "support/expect_exactly.h"

#include <atomic>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace strideweave;
namespace ext = strideweave::extension;
namespace op = strideweave::operation;

// A definition-backed accelerator whose storage is a separate arena.
template <int N>
class RefAccel final : public ext::DefinedCarrier {
 public:
  explicit RefAccel(ext::Construction key) : DefinedCarrier(std::move(key)) {}
  std::vector<Value> arena;
};

template <int N>
ext::StorageProvider arena_storage() {
  using A = RefAccel<N>;
  return ext::StorageProvider(
      [](const Carrier&, const DType& d) {
        return &d == &DType::Float32() || &d == &DType::Int32() || &d == &DType::Bool();
      },
      [](const Carrier& c) { return static_cast<std::int64_t>(static_cast<const A&>(c).arena.size()); },
      [](Carrier& c, std::int64_t n) {
        static_cast<A&>(c).arena.assign(static_cast<std::size_t>(n), *storage_zero(c.dtype()));
      },
      [](Carrier& c) { static_cast<A&>(c).arena.clear(); },
      [](const Carrier& c, std::int64_t i) { return static_cast<const A&>(c).arena[static_cast<std::size_t>(i)]; },
      [](Carrier& c, std::int64_t i, const Value& v) { static_cast<A&>(c).arena[static_cast<std::size_t>(i)] = v; });
}

class RefIface final : public ext::KernelExecutionInterface {
 public:
  using KernelExecutionInterface::KernelExecutionInterface;
};

// The plans the test kernel pack covers: every one of the built-ins the
// forward tests and the built-in VJPs of add, mul, relu, matmul and
// reduce_sum call (relu's VJP: lt and select; broadcasting: reduce_sum).
std::map<std::string, std::vector<OperationPlan>> covered_plans() {
  const PlanOperand f(DType::Float32());
  std::map<std::string, std::vector<OperationPlan>> out;
  for (const char* name : {"add", "elementwise_mul", "div", "maximum", "lt"})
    out[name] = {resolve_operation_plan(name, {f, f})};
  // mul(weak, tensor) runs the (tensor, weak) plan with its operands in the
  // call's order (docs/policy.md): a third plan.
  const OperationPlan tensor_scalar = resolve_operation_plan("mul", {f, PlanOperand(WeakScalar(2.5))});
  const OperationPlan scalar_tensor("mul", {tensor_scalar.operands()[1], tensor_scalar.operands()[0]},
                                    tensor_scalar.compute(), tensor_scalar.accumulation(),
                                    tensor_scalar.accumulator_dtype(), tensor_scalar.output());
  out["mul"] = {resolve_operation_plan("mul", {f, f}), tensor_scalar, scalar_tensor};
  for (const char* name : {"relu", "neg", "exp", "leaky_relu", "reduce_sum", "reduce_max", "argmax", "cumsum"})
    out[name] = {resolve_operation_plan(name, {f})};
  out["matmul"] = {resolve_operation_plan("matmul", {f, f})};
  out["select"] = {resolve_operation_plan("select", {PlanOperand(DType::Bool()), f, f})};
  out["clamp"] = {resolve_operation_plan("clamp", {f, PlanOperand(WeakScalar(0.5)), PlanOperand(WeakScalar(1.5))})};
  out["gather"] = {resolve_operation_plan("gather", {f, PlanOperand(DType::Int32())})};
  // sort and topk: each of their two plans is its own internal definition.
  for (const char* name : {"_sort_values", "_sort_indices", "_topk_values", "_topk_indices"})
    out[name] = {resolve_operation_plan(name, {f})};
  return out;
}

// One kernel pattern per covered built-in: it runs the built-in's reference
// (operation::execute_reference) and publishes the values as fresh compact
// RefAccel<N> storage of the ResultSpec. `prepares` counts every prepare.
template <int N>
void register_ref_accel(std::atomic<int>& prepares, const std::string& without = "") {
  std::vector<ext::KernelPattern> patterns;
  for (const auto& [name, plans] : covered_plans()) {
    if (name == without) continue;
    std::vector<OperationCapability> caps;
    for (const OperationPlan& p : plans) caps.push_back(OperationCapability::from_plan(p));
    patterns.emplace_back(
        op::get_definition(name), caps, "ref_" + name,
        [&prepares](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface& i) -> ext::KernelPattern::Prepared {
          ++prepares;
          auto self = std::shared_ptr<const ext::KernelExecutionInterface>(std::shared_ptr<void>(), &i);
          return ext::PreparedKernel(self, [inv = &inv]() -> ext::ResultSubmission {
            const std::vector<Tensor> reference = op::execute_reference(inv->definition(), *inv);
            std::vector<Tensor> outputs;
            for (std::size_t r = 0; r < reference.size(); ++r) {
              const op::ResultSpec& spec = inv->results()[r];
              auto c = ext::create<RefAccel<N>>(spec.shape().size(), spec.dtype());
              const std::vector<Value> values = reference[r].values();
              for (std::size_t k = 0; k < values.size(); ++k) c->set_value(static_cast<std::int64_t>(k), values[k]);
              outputs.emplace_back(c, 0, spec.layout());
            }
            return ext::ProviderResult(std::move(outputs));
          });
        });
  }
  ext::register_carrier_definition(
      carrier_class<RefAccel<N>>(),
      ext::CarrierDefinition(arena_storage<N>(), ext::KernelProvider(std::make_shared<RefIface>("1"), patterns)));
}

// A tensor of `shape` on RefAccel<N> (or CPU with N < 0) holding `values`.
template <int N>
Tensor on(std::vector<float> values, Shape shape) {
  auto c = ext::create<RefAccel<N>>(static_cast<std::int64_t>(values.size()), DType::Float32());
  for (std::size_t i = 0; i < values.size(); ++i) c->set_value(static_cast<std::int64_t>(i), Value::from_float32(values[i]));
  return Tensor(c, 0, Layout::compact(shape));
}
template <int N>
Tensor on_bool(std::vector<bool> values, Shape shape) {
  auto c = ext::create<RefAccel<N>>(static_cast<std::int64_t>(values.size()), DType::Bool());
  for (std::size_t i = 0; i < values.size(); ++i) c->set_value(static_cast<std::int64_t>(i), Value::from_bool(values[i]));
  return Tensor(c, 0, Layout::compact(shape));
}
template <int N>
Tensor on_int(std::vector<std::int32_t> values, Shape shape) {
  auto c = ext::create<RefAccel<N>>(static_cast<std::int64_t>(values.size()), DType::Int32());
  for (std::size_t i = 0; i < values.size(); ++i) c->set_value(static_cast<std::int64_t>(i), Value::from_int32(values[i]));
  return Tensor(c, 0, Layout::compact(shape));
}

// Same class, dtype, shape and element values (bitwise through Value ==).
void expect_same(const Tensor& typed, const Tensor& by_definition, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(typed.carrier()->exact_class(), by_definition.carrier()->exact_class());
  EXPECT_EQ(&typed.dtype(), &by_definition.dtype());
  EXPECT_EQ(typed.shape(), by_definition.shape());
  const std::vector<Value> a = typed.values(), b = by_definition.values();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(a[i] == b[i]) << "element " << i;
}

Tensor by_definition(const char* name, std::vector<op::CallOperand> operands, op::OptionMap options = {}) {
  return (*op::get_definition(name))(std::move(operands), std::move(options))[0];
}

TEST(TypedDefinitionRoute_Step4, EveryCoveredBuiltInTypedCallEqualsTheCallByDefinition) {
  std::atomic<int> prepares{0};
  register_ref_accel<60>(prepares);
  const Tensor a = on<60>({1, -2, 3, -4, 5, -6}, Shape{2, 3});
  const Tensor b = on<60>({0.5f, 7, -1, 2, -3, 4}, Shape{2, 3});
  const Tensor row = on<60>({10, 20, 30}, Shape{3});
  const Tensor m = on<60>({1, 2, 3, 4, 5, 6}, Shape{3, 2});
  const Tensor v = on<60>({1, -1}, Shape{2});
  const Tensor cond = on_bool<60>({true, false, true, false, false, true}, Shape{2, 3});
  const Tensor idx = on_int<60>({2, 0, 1, 1, 0, 2}, Shape{2, 3});
  struct Case {
    std::string what;
    Tensor typed;
    Tensor definition;
  };
  const std::vector<Case> cases = {
      {"add", add(a, b), by_definition("add", {a, b})},
      {"add broadcast", add(a, row), by_definition("add", {a, row})},
      {"operator+", a + b, by_definition("add", {a, b})},
      {"elementwise_mul", elementwise_mul(a, b), by_definition("elementwise_mul", {a, b})},
      {"mul", mul(a, b), by_definition("mul", {a, b})},
      {"operator* scalar", a * 2.5, by_definition("mul", {a, WeakScalar(2.5)})},
      {"scalar operator*", 2.5 * a, by_definition("mul", {WeakScalar(2.5), a})},
      {"div", div(a, b), by_definition("div", {a, b})},
      {"operator/", a / b, by_definition("div", {a, b})},
      {"maximum", maximum(a, b), by_definition("maximum", {a, b})},
      {"lt", lt(a, b), by_definition("lt", {a, b})},
      {"operator<", a < b, by_definition("lt", {a, b})},
      {"select", select(cond, a, b), by_definition("select", {cond, a, b})},
      {"clamp", clamp(a, WeakScalar(0.5), WeakScalar(1.5)), by_definition("clamp", {a, WeakScalar(0.5), WeakScalar(1.5)})},
      {"relu", relu(a), by_definition("relu", {a})},
      {"neg", neg(a), by_definition("neg", {a})},
      {"unary operator-", -a, by_definition("neg", {a})},
      {"exp", exp(a), by_definition("exp", {a})},
      {"leaky_relu", leaky_relu(a, 0.25), by_definition("leaky_relu", {a}, {{"negative_slope", 0.25}})},
      {"reduce_sum all", reduce_sum(a), by_definition("reduce_sum", {a})},
      {"reduce_sum axis", reduce_sum(a, Axes{1}, true),
       by_definition("reduce_sum", {a}, {{"axes", std::vector<std::int64_t>{1}}, {"keepdims", true}})},
      {"reduce_max", reduce_max(a, Axes{0}), by_definition("reduce_max", {a}, {{"axes", std::vector<std::int64_t>{0}}})},
      {"argmax", argmax(a, std::int64_t{1}), by_definition("argmax", {a}, {{"axis", std::int64_t{1}}})},
      {"cumsum", cumsum(a, 1), by_definition("cumsum", {a}, {{"axis", std::int64_t{1}}})},
      {"matmul", matmul(a, m), by_definition("matmul", {a, m})},
      {"matmul vector", matmul(a.permute({1, 0}), v), by_definition("matmul", {a.permute({1, 0}), v})},
      {"gather", gather(a, idx, 1), by_definition("gather", {a, idx}, {{"axis", std::int64_t{1}}})},
  };
  for (const Case& c : cases) expect_same(c.typed, c.definition, c.what);
  // Every typed call ran the pattern (one prepare each, like the call by
  // definition).
  EXPECT_EQ(prepares.load(), 2 * static_cast<int>(cases.size()));
  // The values are the built-in's (spot checks against CPU arithmetic).
  EXPECT_EQ(add(a, row).values()[0], Value::from_float32(11));
  EXPECT_EQ(matmul(a, m).shape(), (Shape{2, 2}));
  EXPECT_EQ(matmul(a.permute({1, 0}), v).shape(), (Shape{3}));
}

TEST(TypedDefinitionRoute_Step4, APlanWithoutAPatternIsTheStructuredUnsupportedOperationPlanBeforeAnyPrepare) {
  std::atomic<int> prepares{0};
  register_ref_accel<61>(prepares);
  const Tensor a = on<61>({1, 2}, Shape{2});
  // sub has no pattern: the gate refuses the plan.
  try {
    (void)sub(a, a);
    FAIL() << "expected UnsupportedOperationPlan";
  } catch (const UnsupportedOperationPlan& e) {
    ASSERT_TRUE(e.plan());
    EXPECT_EQ(e.plan()->operation(), "sub");
  }
  EXPECT_THROW((void)(a - a), NotImplementedError);  // UnsupportedOperationPlan is a NotImplementedError
  // Int32 add: the pack covers Float32 only.
  const Tensor i = on_int<61>({1, 2}, Shape{2});
  EXPECT_THROW((void)add(i, i), UnsupportedOperationPlan);
  EXPECT_EQ(prepares.load(), 0);
  // An operand on another class stays the TypeError of the typed function.
  EXPECT_THROW((void)add(a, make_tensor<CPU>({1.0f, 2.0f}, Shape{2})), TypeError);
}

// sort and topk run two plans: on a definition-backed carrier each plan runs
// its internal definition (_sort_values/_sort_indices,
// _topk_values/_topk_indices) through the pipeline, and the pair equals both
// the calls by definition and CPU's sort/topk (values and Int32 indices; ties
// keep their order: stable).
TEST(TypedDefinitionRoute_Step4, SortAndTopkRunTheirTwoInternalDefinitionsAndEqualCpu) {
  std::atomic<int> prepares{0};
  register_ref_accel<70>(prepares);
  const std::vector<float> data = {3, 1, 2, 1, 3, 0, -1, 5, 5, 2, -1, 5};
  const Tensor a = on<70>(data, Shape{2, 6});
  const Tensor cpu = make_tensor<CPU>(data, Shape{2, 6});
  struct Case {
    std::string what;
    SortResult typed;
    SortResult on_cpu;
    const char* values_op;
    op::OptionMap options;
  };
  const std::vector<Case> cases = {
      {"sort", sort(a), sort(cpu), "_sort", {}},
      {"sort descending axis 0", sort(a, 0, true), sort(cpu, 0, true), "_sort",
       {{"axis", std::int64_t{0}}, {"descending", true}}},
      {"sort descending", sort(a, -1, true), sort(cpu, -1, true), "_sort", {{"descending", true}}},
      {"topk", topk(a, 3), topk(cpu, 3), "_topk", {{"k", std::int64_t{3}}}},
      {"topk smallest", topk(a, 4, 1, false), topk(cpu, 4, 1, false), "_topk",
       {{"k", std::int64_t{4}}, {"axis", std::int64_t{1}}, {"largest", false}}},
      {"topk k=0", topk(a, 0), topk(cpu, 0), "_topk", {{"k", std::int64_t{0}}}},
  };
  for (const Case& c : cases) {
    expect_same(c.typed.values, by_definition((std::string(c.values_op) + "_values").c_str(), {a}, c.options),
                c.what + " values");
    expect_same(c.typed.indices, by_definition((std::string(c.values_op) + "_indices").c_str(), {a}, c.options),
                c.what + " indices");
    SCOPED_TRACE(c.what);
    EXPECT_EQ(c.typed.values.carrier()->exact_class(), carrier_class<RefAccel<70>>());
    EXPECT_EQ(&c.typed.values.dtype(), &DType::Float32());
    EXPECT_EQ(&c.typed.indices.dtype(), &DType::Int32());
    EXPECT_EQ(c.typed.values.shape(), c.on_cpu.values.shape());
    EXPECT_EQ(c.typed.values.values(), c.on_cpu.values.values());
    EXPECT_EQ(c.typed.indices.values(), c.on_cpu.indices.values());
  }
  // Two patterns per typed call and two per pair of calls by definition.
  EXPECT_EQ(prepares.load(), 4 * static_cast<int>(cases.size()));
  // Stability on the carrier itself: equal elements keep their order, in
  // both directions.
  const Tensor line = on<70>({2, 1, 0, 1, 2}, Shape{5});
  const auto ints = [](std::vector<std::int32_t> v) {
    std::vector<Value> out;
    for (std::int32_t i : v) out.push_back(Value::from_int32(i));
    return out;
  };
  EXPECT_EQ(sort(line).indices.values(), ints({2, 1, 3, 0, 4}));
  EXPECT_EQ(sort(line, 0, true).indices.values(), ints({0, 4, 1, 3, 2}));
  EXPECT_EQ(topk(line, 2, 0, false).indices.values(), ints({2, 1}));
  // Option errors stay the typed function's, before any prepare.
  const int before = prepares.load();
  EXPECT_THROW((void)topk(a, 7), ValueError);
  EXPECT_THROW((void)sort(a, 2), ValueError);
  EXPECT_EQ(prepares.load(), before);
}

TEST(TypedDefinitionRoute_Step4, SortWithoutItsIndicesPatternIsUnsupportedOperationPlanBeforeEitherPrepare) {
  std::atomic<int> prepares{0};
  register_ref_accel<71>(prepares, "_sort_indices");
  const Tensor a = on<71>({2, 1}, Shape{2});
  try {
    (void)sort(a);
    FAIL() << "expected UnsupportedOperationPlan";
  } catch (const UnsupportedOperationPlan& e) {
    ASSERT_TRUE(e.plan());
    EXPECT_EQ(e.plan()->operation(), "_sort_indices");
  }
  EXPECT_EQ(prepares.load(), 0);  // the values pattern was not prepared either
  EXPECT_EQ(topk(a, 1).values.values()[0], Value::from_float32(2));
}

// ---------------------------------------------------------------- caller-provided outputs

TEST(TypedDefinitionRoute_Out, TheValidatedResultIsWrittenIntoOutWhichAdvancesOneVersion) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  std::atomic<int> prepares{0};
  register_ref_accel<62>(prepares);
  const Tensor a = on<62>({1, 2, 3, 4}, Shape{2, 2});
  const Tensor b = on<62>({10, 20, 30, 40}, Shape{2, 2});
  const Tensor out = on<62>({0, 0, 0, 0}, Shape{2, 2});
  const std::uint64_t version = out.carrier()->version();
  const Tensor r = add(a, b, into(out));
  EXPECT_TRUE(r.is(out));
  EXPECT_EQ(out.carrier()->version(), version + 1);
  expect_same(out, add(a, b), "overwrite");
  // Accumulate adds to what is there; a strided output (a transposed view)
  // receives each element at its own slot.
  const Tensor acc = on<62>({1, 1, 1, 1}, Shape{2, 2});
  (void)add(a, b, accumulate_into(acc));
  expect_same(acc, add(add(a, b), on<62>({1, 1, 1, 1}, Shape{2, 2})), "accumulate");
  const Tensor backing = on<62>({0, 0, 0, 0}, Shape{2, 2});
  const Tensor transposed = backing.permute({1, 0});
  (void)matmul(a, b, std::nullopt, into(transposed));
  expect_same(transposed, matmul(a, b), "strided");
  // By definition and by name, the same.
  const Tensor by_def = on<62>({0, 0, 0, 0}, Shape{2, 2});
  const std::vector<Tensor> d = (*op::get_definition("mul"))({a, b}, {}, into(by_def));
  EXPECT_TRUE(d[0].is(by_def));
  expect_same(by_def, mul(a, b), "by definition");
  const Tensor by_name = on<62>({0, 0, 0, 0}, Shape{2, 2});
  ExecutionRequest request;
  request.out = into(by_name);
  const std::vector<CallOperand> operands{a, b};
  (void)call_operation("elementwise_mul", operands, {}, request);
  expect_same(by_name, mul(a, b), "by name");
}

TEST(TypedDefinitionRoute_Out, ABadOutputIsRefusedBeforeAnyPrepareAndNothingChanges) {
  std::atomic<int> prepares{0};
  register_ref_accel<66>(prepares);
  const Tensor a = on<66>({1, 2}, Shape{2});
  const Tensor out = on<66>({7, 7}, Shape{2});
  const std::uint64_t version = out.carrier()->version();
  EXPECT_THROW((void)add(a, a, into(on<66>({0, 0, 0}, Shape{3}))), ValueError);            // shape
  EXPECT_THROW((void)lt(a, a, into(out)), TypeError);                                       // dtype
  EXPECT_THROW((void)add(a, a, into(make_tensor<CPU>({0.0f, 0.0f}, Shape{2}))), TypeError);  // class
  EXPECT_THROW((void)add(a, out, into(out)), ValueError);                                  // shares an operand
  EXPECT_THROW((void)add(a, a, into(on<66>({0}, Shape{1}).broadcast_to(Shape{2}))), ValueError);  // not injective
  Tensor g = on<66>({1, 2}, Shape{2});
  EXPECT_THROW((void)add(g, a, into(out)), RuntimeError);  // would record a graph
  {
    NoGradGuard no_grad;
    (void)add(g, a, into(out));  // under no_grad it writes
  }
  EXPECT_EQ(out.carrier()->version(), version + 1);
  EXPECT_EQ(prepares.load(), 1);
}

// add on RefAccel<N> fails in submit: the output stays as it was.
template <int N>
void register_failing_add() {
  auto p = ext::KernelPattern(
      op::get_definition("add"),
      {OperationCapability::from_plan(resolve_operation_plan("add", {PlanOperand(DType::Float32()),
                                                                     PlanOperand(DType::Float32())}))},
      "failing_add", [](const op::ResolvedInvocation&, const ext::KernelExecutionInterface& i) -> ext::KernelPattern::Prepared {
        auto self = std::shared_ptr<const ext::KernelExecutionInterface>(std::shared_ptr<void>(), &i);
        return ext::PreparedKernel(self, []() -> ext::ResultSubmission { throw RuntimeError("device lost"); });
      });
  ext::register_carrier_definition(
      carrier_class<RefAccel<N>>(),
      ext::CarrierDefinition(arena_storage<N>(), ext::KernelProvider(std::make_shared<RefIface>("1"), {p})));
}

// add on RefRogue<N>: the pattern publishes a result of the wrong shape
// (ProviderContractError "shape") when `wrong_shape`; the storage's write
// callback fails once, after `fail_writes_after` more writes succeeded
// (negative: never).
template <int N>
class RefRogue final : public ext::DefinedCarrier {
 public:
  explicit RefRogue(ext::Construction key) : DefinedCarrier(std::move(key)) {}
  std::vector<Value> arena;
  static inline int fail_writes_after = -1;
  static inline bool wrong_shape = false;
};

template <int N>
void register_rogue_add() {
  using R = RefRogue<N>;
  ext::StorageProvider storage(
      [](const Carrier&, const DType& d) { return &d == &DType::Float32(); },
      [](const Carrier& c) { return static_cast<std::int64_t>(static_cast<const R&>(c).arena.size()); },
      [](Carrier& c, std::int64_t n) { static_cast<R&>(c).arena.assign(static_cast<std::size_t>(n), Value::from_float32(0)); },
      [](Carrier& c) { static_cast<R&>(c).arena.clear(); },
      [](const Carrier& c, std::int64_t i) { return static_cast<const R&>(c).arena[static_cast<std::size_t>(i)]; },
      [](Carrier& c, std::int64_t i, const Value& v) {
        if (R::fail_writes_after == 0) {
          R::fail_writes_after = -1;  // one failure
          throw RuntimeError("storage write failed");
        }
        if (R::fail_writes_after > 0) --R::fail_writes_after;
        static_cast<R&>(c).arena[static_cast<std::size_t>(i)] = v;
      });
  auto p = ext::KernelPattern(
      op::get_definition("add"),
      {OperationCapability::from_plan(resolve_operation_plan("add", {PlanOperand(DType::Float32()),
                                                                     PlanOperand(DType::Float32())}))},
      "rogue_add", [](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface& i) -> ext::KernelPattern::Prepared {
        auto self = std::shared_ptr<const ext::KernelExecutionInterface>(std::shared_ptr<void>(), &i);
        return ext::PreparedKernel(self, [inv = &inv]() -> ext::ResultSubmission {
          const Tensor& a = std::get<Tensor>(inv->operands()[0]);
          const std::int64_t n = R::wrong_shape ? a.size() + 1 : a.size();
          auto c = ext::create<R>(n, DType::Float32());
          for (std::int64_t k = 0; k < a.size(); ++k)
            static_cast<R&>(*c).arena[static_cast<std::size_t>(k)] = Value::from_float32(2 * a.values()[static_cast<std::size_t>(k)].f);
          return ext::ProviderResult({Tensor(c, 0, Layout::compact(Shape{n}))});
        });
      });
  ext::register_carrier_definition(
      carrier_class<R>(), ext::CarrierDefinition(storage, ext::KernelProvider(std::make_shared<RefIface>("1"), {p})));
}

TEST(TypedDefinitionRoute_Out, APublicationValidationFailureLeavesTheOutputUnchanged) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  using R = RefRogue<69>;
  register_rogue_add<69>();
  auto a_storage = ext::create<R>(2, DType::Float32());
  auto out_storage = ext::create<R>(2, DType::Float32());
  out_storage->set_value(0, Value::from_float32(7));
  const Tensor a(a_storage, 0, Layout::compact(Shape{2})), out(out_storage, 0, Layout::compact(Shape{2}));
  const std::uint64_t version = out.carrier()->version();
  R::wrong_shape = true;
  try {
    (void)add(a, a, into(out));
    FAIL() << "expected ProviderContractError";
  } catch (const ProviderContractError& e) {
    EXPECT_EQ(e.field(), "shape");
  }
  R::wrong_shape = false;
  EXPECT_EQ(out.carrier()->version(), version);
  EXPECT_EQ(out.values()[0], Value::from_float32(7));
}

TEST(TypedDefinitionRoute_Out, AStorageWriteFailingPartWayIsWrittenBackBeforeTheErrorPropagates) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  using R = RefRogue<70>;
  register_rogue_add<70>();
  auto a_storage = ext::create<R>(3, DType::Float32());
  auto out_storage = ext::create<R>(3, DType::Float32());
  for (std::int64_t i = 0; i < 3; ++i) {
    a_storage->set_value(i, Value::from_float32(static_cast<float>(i + 1)));
    out_storage->set_value(i, Value::from_float32(-1));
  }
  const Tensor a(a_storage, 0, Layout::compact(Shape{3})), out(out_storage, 0, Layout::compact(Shape{3}));
  R::fail_writes_after = 1;  // the first element is written, the second write fails
  EXPECT_THROW((void)add(a, a, into(out)), RuntimeError);
  EXPECT_EQ(R::fail_writes_after, -1);  // the failure happened
  for (const Value& v : out.values()) EXPECT_EQ(v, Value::from_float32(-1));
}

TEST(TypedDefinitionRoute_Out, AProviderFailureLeavesTheOutputAndItsVersionUnchanged) {
  register_failing_add<67>();
  const Tensor a = on<67>({1, 2}, Shape{2});
  const Tensor out = on<67>({7, 8}, Shape{2});
  const std::uint64_t version = out.carrier()->version();
  EXPECT_THROW((void)add(a, a, into(out)), RuntimeError);
  EXPECT_THROW((void)add(a, a, accumulate_into(out)), RuntimeError);
  EXPECT_EQ(out.carrier()->version(), version);
  EXPECT_EQ(out.values()[0], Value::from_float32(7));
  EXPECT_EQ(out.values()[1], Value::from_float32(8));
}

// A dependent definition-backed carrier: its CompositeProvider runs the
// built-in add's reference and publishes the result on CPU.
template <int N>
class RefPair final : public ext::DefinedDependentCarrier {
 public:
  explicit RefPair(ext::Construction key) : DefinedDependentCarrier(std::move(key)) {}
  std::vector<Value> arena;
};

template <int N>
ext::StorageProvider pair_storage() {
  using P = RefPair<N>;
  return ext::StorageProvider(
      [](const Carrier&, const DType& d) { return &d == &DType::Float32(); },
      [](const Carrier& c) { return static_cast<std::int64_t>(static_cast<const P&>(c).arena.size()); },
      [](Carrier& c, std::int64_t n) { static_cast<P&>(c).arena.assign(static_cast<std::size_t>(n), Value::from_float32(0)); },
      [](Carrier& c) { static_cast<P&>(c).arena.clear(); },
      [](const Carrier& c, std::int64_t i) { return static_cast<const P&>(c).arena[static_cast<std::size_t>(i)]; },
      [](Carrier& c, std::int64_t i, const Value& v) { static_cast<P&>(c).arena[static_cast<std::size_t>(i)] = v; });
}

TEST(TypedDefinitionRoute_Step4, ADependentCarrierEntersThroughItsCompositeProvider) {
  using P = RefPair<68>;
  std::atomic<int> prepares{0};
  const OperationPlan add_plan =
      resolve_operation_plan("add", {PlanOperand(DType::Float32()), PlanOperand(DType::Float32())});
  ext::CompositeProvider composite(
      [add_plan](const Carrier&) { return std::vector{OperationCapability::from_plan(add_plan)}; },
      [](const Carrier&, const op::ResolvedInvocation& inv) {
        return std::vector<CarrierClass>(inv.results().size(), carrier_class<CPU>());
      },
      [&prepares](const Carrier&, const op::ResolvedInvocation& inv) -> ext::CompositeProvider::Prepared {
        ++prepares;
        return ext::PreparedComposite([inv = &inv]() -> ext::ResultSubmission {
          const Tensor reference = op::execute_reference(inv->definition(), *inv)[0];
          std::vector<float> v;
          for (const Value& e : reference.values()) v.push_back(e.f);
          return ext::ProviderResult({make_tensor<CPU>(std::span<const float>(v), inv->results()[0].shape())});
        });
      });
  ext::register_carrier_definition(carrier_class<P>(), ext::CarrierDefinition(pair_storage<68>(), std::nullopt, {}, composite));
  auto c = ext::create<P>(3, DType::Float32());
  for (std::int64_t i = 0; i < 3; ++i) c->set_value(i, Value::from_float32(static_cast<float>(i + 1)));
  const Tensor x(c, 0, Layout::compact(Shape{3}));
  const Tensor typed = add(x, x), operator_form = x + x;
  expect_same(typed, by_definition("add", {x, x}), "typed");
  expect_same(operator_form, typed, "operator");
  EXPECT_EQ(typed.carrier()->exact_class(), carrier_class<CPU>());
  EXPECT_EQ(typed.values()[2], Value::from_float32(6));
  EXPECT_EQ(prepares.load(), 3);
  EXPECT_THROW((void)sub(x, x), UnsupportedOperationPlan);
  EXPECT_EQ(prepares.load(), 3);
}

// ---------------------------------------------------------------- gradients

// The same computation on RefAccel<N> and on CPU: every gradient equal.
template <int N>
void expect_gradients_equal_cpu(const std::vector<std::vector<float>>& values, const std::vector<Shape>& shapes,
                                Tensor (*f)(const std::vector<Tensor>&)) {
  std::vector<Tensor> accel, cpu;
  for (std::size_t k = 0; k < values.size(); ++k) {
    accel.push_back(on<N>(values[k], shapes[k]));
    cpu.push_back(make_tensor<CPU>(std::span<const float>(values[k]), shapes[k]));
  }
  const Tensor ya = f(accel), yc = f(cpu);
  ASSERT_TRUE(ya.grad_fn());
  EXPECT_EQ(ya.carrier()->exact_class(), carrier_class<RefAccel<N>>());
  ya.backward();
  yc.backward();
  for (std::size_t k = 0; k < values.size(); ++k) {
    SCOPED_TRACE(k);
    ASSERT_TRUE(accel[k].grad());
    ASSERT_TRUE(cpu[k].grad());
    EXPECT_EQ(accel[k].grad()->carrier()->exact_class(), carrier_class<RefAccel<N>>());
    EXPECT_EQ(accel[k].grad()->shape(), cpu[k].grad()->shape());
    const std::vector<Value> ga = accel[k].grad()->values(), gc = cpu[k].grad()->values();
    ASSERT_EQ(ga.size(), gc.size());
    for (std::size_t i = 0; i < ga.size(); ++i) EXPECT_EQ(ga[i].f, gc[i].f) << "element " << i;
  }
}

TEST(TypedDefinitionRoute_Step4, BuiltInGradientsOnADefinitionBackedCarrierEqualThoseOnCpu) {
  std::atomic<int> prepares{0};
  register_ref_accel<63>(prepares);
  const std::vector<std::vector<float>> values = {
      {1, -2, 3, -4, 5, -6}, {0.5f, 1.5f, -2, 3, 0.25f, -1}, {2, -1, 0.5f, 3, -2, 1}, {1, -3}};
  const std::vector<Shape> shapes = {Shape{2, 3}, Shape{3, 2}, Shape{2, 3}, Shape{2}};
  // add (with broadcasting), mul (tensor and scalar), relu, matmul, reduce_sum.
  expect_gradients_equal_cpu<63>(values, shapes, [](const std::vector<Tensor>& t) {
    const Tensor h = relu(matmul(t[0] * t[2] * 2.5, t[1]) + t[3]);
    return reduce_sum(h * h);
  });
  // Each one alone.
  expect_gradients_equal_cpu<63>({{1, -2, 3}, {4, 5, -6}}, {Shape{3}, Shape{3}},
                                 [](const std::vector<Tensor>& t) { return reduce_sum(add(t[0], t[1])); });
  expect_gradients_equal_cpu<63>({{1, -2, 3}, {4, 5, -6}}, {Shape{3}, Shape{3}}, [](const std::vector<Tensor>& t) {
    return reduce_sum(mul(mul(t[0], t[1]), t[1]));
  });
  expect_gradients_equal_cpu<63>({{1, -2, 3, 0}}, {Shape{4}},
                                 [](const std::vector<Tensor>& t) { return reduce_sum(mul(relu(t[0]), 3.0)); });
  expect_gradients_equal_cpu<63>({{1, 2, 3, 4, 5, 6}, {1, -1, 2}}, {Shape{2, 3}, Shape{3}},
                                 [](const std::vector<Tensor>& t) { return reduce_sum(matmul(t[0], t[1])); });
  expect_gradients_equal_cpu<63>({{1, 2, 3, 4, 5, 6}}, {Shape{2, 3}}, [](const std::vector<Tensor>& t) {
    return reduce_sum(mul(reduce_sum(t[0], Axes{1}), reduce_sum(t[0], Axes{1})));
  });
}

TEST(TypedDefinitionRoute_Step4, ABuiltInCalledByDefinitionBackpropagatesOnTheCarrier) {
  std::atomic<int> prepares{0};
  register_ref_accel<64>(prepares);
  Tensor a = on<64>({1, 2, 3}, Shape{3});
  const Tensor b = on<64>({10, 20, 30}, Shape{3});
  const Tensor y = by_definition("mul", {a, b});
  ASSERT_TRUE(y.grad_fn());
  EXPECT_EQ(y.grad_fn()->name(), "mul");
  y.backward(on<64>({1, 2, 3}, Shape{3}));
  ASSERT_TRUE(a.grad());
  EXPECT_EQ(a.grad()->carrier()->exact_class(), carrier_class<RefAccel<64>>());
  const std::vector<Value> g = a.grad()->values();
  EXPECT_EQ(g[0].f, 10);
  EXPECT_EQ(g[1].f, 40);
  EXPECT_EQ(g[2].f, 90);
}

}  // namespace

// ---- Issue 20 step 1: one dispatch record per (exact class, plan)
//
// The gate's lookup also says what executes the plan (docs/design.md, "One
// dispatch record"), so a call of any kind, typed or by definition, on a
// definition-backed carrier is lowered once and gated once, exactly as on a
// kernel-backed one. Before the record, a typed call missed the kernel
// table, went back up by name, and was lowered and gated a second time.
// One kernel pattern, for add on Float32, that adds the arenas itself (no
// nested call: a reference run on Generic would be a call of its own, with
// its own gate). `prepares` counts every prepare.
template <int N>
void register_adding_accel(std::atomic<int>& prepares) {
  const PlanOperand f(DType::Float32());
  std::vector<ext::KernelPattern> patterns;
  patterns.emplace_back(
      op::get_definition("add"), std::vector{OperationCapability::from_plan(resolve_operation_plan("add", {f, f}))},
      "arena_add",
      [&prepares](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface& i) -> ext::KernelPattern::Prepared {
        ++prepares;
        auto self = std::shared_ptr<const ext::KernelExecutionInterface>(std::shared_ptr<void>(), &i);
        return ext::PreparedKernel(self, [inv = &inv]() -> ext::ResultSubmission {
          const Tensor& a = std::get<Tensor>(inv->operands()[0]);
          const Tensor& b = std::get<Tensor>(inv->operands()[1]);
          const op::ResultSpec& spec = inv->results()[0];
          auto c = ext::create<RefAccel<N>>(spec.shape().size(), spec.dtype());
          for (std::int64_t k = 0; k < spec.shape().size(); ++k)
            c->arena[static_cast<std::size_t>(k)] =
                Value::from_float32(a.carrier()->get_value(a.offset() + a.layout()(k)).f +
                                    b.carrier()->get_value(b.offset() + b.layout()(k)).f);
          return ext::ProviderResult(std::vector<Tensor>{Tensor(c, 0, spec.layout())});
        });
      });
  ext::register_carrier_definition(
      carrier_class<RefAccel<N>>(),
      ext::CarrierDefinition(arena_storage<N>(), ext::KernelProvider(std::make_shared<RefIface>("1"), patterns)));
}

TEST(DispatchRecord_Issue20Step1, ATypedCallOnADefinitionBackedCarrierIsGatedOnceLikeOnCpu) {
  std::atomic<int> prepares{0};
  register_adding_accel<65>(prepares);
  const Tensor a = on<65>({1, 2, 3}, Shape{3});
  const Tensor b = on<65>({4, 5, 6}, Shape{3});
  const Tensor ca = make_tensor<CPU>({1.0f, 2.0f, 3.0f}, Shape{3});
  const Tensor cb = make_tensor<CPU>({4.0f, 5.0f, 6.0f}, Shape{3});
  (void)add(a, b);  // the class is sealed and the plan remembered by now
  (void)add(ca, cb);
  const auto lookups = [](const auto& call) {
    const std::uint64_t before = storage::gate_lookups_on_this_thread();
    const std::uint64_t resolved = policy_probe::resolutions_on_this_thread();
    const Tensor result = call();
    EXPECT_EQ(policy_probe::resolutions_on_this_thread() - resolved, 0u) << "a remembered plan was resolved again";
    return std::pair{storage::gate_lookups_on_this_thread() - before, result};
  };
  const int before = prepares.load();
  const auto [typed, typed_result] = lookups([&] { return add(a, b); });
  const auto [named, named_result] = lookups([&] { return by_definition("add", {a, b}); });
  const auto [cpu, cpu_result] = lookups([&] { return add(ca, cb); });
  EXPECT_EQ(typed, 1u);
  EXPECT_EQ(named, 1u);
  EXPECT_EQ(cpu, 1u);
  EXPECT_EQ(prepares.load() - before, 2);  // one pattern run per call
  expect_same(typed_result, named_result, "typed add == add by definition");
  EXPECT_EQ(typed_result.values()[2], Value::from_float32(9));
}

TEST(DispatchRecord_Issue20Step1, TheRecordNamesWhatExecutesThePlan) {
  std::atomic<int> prepares{0};
  register_ref_accel<72>(prepares);
  const OperationPlan plan = resolve_operation_plan("add", {DType::Float32(), DType::Float32()});
  using capability_registry::ExecutorKind;
  // A kernel-backed class: its kernel, in the class's own table.
  const Tensor cpu = make_tensor<CPU>({1.0f}, Shape{1});
  const storage::Admission k = storage::gate(*cpu.carrier(), plan);
  EXPECT_EQ(k.executor.kind, ExecutorKind::Kernel);
  EXPECT_EQ(k.executor.target, kernel_table(carrier_class<CPU>())->find(plan));
  // A definition-backed class: its statically matching kernel patterns, in
  // preference order (carrier-extension R11.3-R11.4).
  const Tensor accel = on<72>({1}, Shape{1});
  const storage::Admission p = storage::gate(*accel.carrier(), plan);
  ASSERT_EQ(p.executor.kind, ExecutorKind::KernelPatterns);
  const auto& candidates = *static_cast<const std::vector<const ext::detail::Candidate*>*>(p.executor.target);
  ASSERT_EQ(candidates.size(), 1u);
  EXPECT_EQ(candidates[0]->pattern->kernel_id(), "ref_add");
  // A miss is the gate's structured error, as before.
  const OperationPlan sub = resolve_operation_plan("sub", {DType::Float32(), DType::Float32()});
  EXPECT_THROW_EXACTLY(storage::gate(*accel.carrier(), sub), UnsupportedOperationPlan);
}
