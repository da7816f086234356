// opcheck (issue 11 step 7; include/strideweave/opcheck.h, docs/opcheck.md):
// operation-semantics.md "Reference execution provides a carrier-neutral
// oracle" (any carrier advertising a resolved invocation agrees with the
// reference on result count, shape, Layout, dtype, values within atol/rtol,
// aliasing and mutation effects, error conditions and differentiability),
// checked pattern by pattern. Each class of bug is planted in one pattern
// (or VJP) and must be caught with the right field, while a correct pattern
// passes.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

using namespace strideweave;
namespace ext = strideweave::extension;
namespace op = strideweave::operation;

// An accelerator whose storage is a separate arena per instance.
template <int N>
class Arena final : public ext::DefinedCarrier {
 public:
  explicit Arena(ext::Construction key) : DefinedCarrier(std::move(key)) {}
  std::vector<Value> arena;
};

template <int N>
ext::StorageProvider arena_storage() {
  using A = Arena<N>;
  return ext::StorageProvider(
      [](const Carrier&, const DType& d) { return &d == &DType::Float32() || &d == &DType::Int32(); },
      [](const Carrier& c) { return static_cast<std::int64_t>(static_cast<const A&>(c).arena.size()); },
      [](Carrier& c, std::int64_t n) { static_cast<A&>(c).arena.assign(static_cast<std::size_t>(n), *storage_zero(c.dtype())); },
      [](Carrier& c) { static_cast<A&>(c).arena.clear(); },
      [](const Carrier& c, std::int64_t i) { return static_cast<const A&>(c).arena[static_cast<std::size_t>(i)]; },
      [](Carrier& c, std::int64_t i, const Value& v) { static_cast<A&>(c).arena[static_cast<std::size_t>(i)] = v; });
}

class Iface final : public ext::KernelExecutionInterface {
 public:
  using KernelExecutionInterface::KernelExecutionInterface;
};

float read(const Tensor& t, std::int64_t ordinal) { return t.carrier()->get_value(t.offset() + t.layout()(ordinal)).f; }

// A compact tensor of `shape` on `like`'s class holding f(x) of t's elements.
template <class F>
Tensor map_values(const Tensor& t, const Carrier& like, F f, const DType& dtype = DType::Float32()) {
  std::vector<Value> v;
  for (std::int64_t i = 0; i < t.size(); ++i)
    v.push_back(&dtype == &DType::Int32() ? Value::from_int32(static_cast<std::int32_t>(f(read(t, i))))
                                          : Value::from_float32(f(read(t, i))));
  return Tensor(like.new_like(v, true, &dtype), 0, Layout::compact(t.shape()));
}

op::ResolveFn same_shape_resolve() {
  return [](const op::BoundOperationCall& call) {
    const Tensor& x = call.tensor(0);
    OperationPlan plan(call.definition().name(), {OperandPlan::tensor(x.dtype())}, Arithmetic::BINARY32, std::nullopt,
                       nullptr, x.dtype());
    return op::ResolvedInvocation(call, plan, {op::ResultSpec::compact(x.dtype(), x.shape(), 1e-6, 1e-6)});
  };
}
op::ReferenceFn doubling_reference() {
  return [](const op::ResolvedInvocation& inv) -> op::ReferenceResult {
    const Tensor& x = std::get<Tensor>(inv.operands()[0]);
    return map_values(x, *x.carrier(), [](float v) { return 2 * v; });
  };
}
// The correct VJP of 2x, or a wrong one (3x).
op::VjpFn doubling_vjp(float factor) {
  return [factor](const op::VJPContext&, std::span<const std::optional<Tensor>> cot) {
    return std::vector<std::optional<Tensor>>{map_values(*cot[0], *cot[0]->carrier(), [factor](float v) { return factor * v; })};
  };
}

std::shared_ptr<const op::OperationDefinition> define_double(const std::string& name, float vjp_factor) {
  return op::define_operation(name, op::OperationSchema({op::OperandSpec("x", op::OperandKind::TENSOR, true)}),
                              same_shape_resolve(), doubling_reference(), doubling_vjp(vjp_factor));
}

OperationCapability f32_plan(const std::string& name) {
  return OperationCapability::from_plan(OperationPlan(name, {OperandPlan::tensor(DType::Float32())}, Arithmetic::BINARY32,
                                                      std::nullopt, nullptr, DType::Float32()));
}

using Body = std::function<ext::ProviderResult(const op::ResolvedInvocation&)>;

ext::KernelPattern pattern(const std::shared_ptr<const op::OperationDefinition>& d, std::string id, Body body,
                           std::function<bool(const op::ResolvedInvocation&)> accepts = {}) {
  return ext::KernelPattern(
      d, {f32_plan(d->name())}, std::move(id),
      [body = std::move(body), accepts](const op::ResolvedInvocation& inv,
                                        const ext::KernelExecutionInterface& i) -> ext::KernelPattern::Prepared {
        if (accepts && !accepts(inv)) return ext::Unsupported("more than 4 elements");
        auto self = std::shared_ptr<const ext::KernelExecutionInterface>(std::shared_ptr<void>(), &i);
        return ext::PreparedKernel(self, [body, inv = &inv]() -> ext::ResultSubmission { return body(*inv); });
      });
}

template <int N>
ext::ProviderResult fresh(const op::ResolvedInvocation& inv, float (*f)(float), const DType& dtype = DType::Float32(),
                          bool row_major = false) {
  const Tensor& x = std::get<Tensor>(inv.operands()[0]);
  auto out = ext::create<Arena<N>>(x.size(), dtype);
  const Layout layout = row_major ? Layout::row_major(x.shape()) : Layout::compact(x.shape());
  for (std::int64_t i = 0; i < x.size(); ++i) {
    const float v = f(read(x, i));
    out->set_value(layout(i), &dtype == &DType::Int32() ? Value::from_int32(static_cast<std::int32_t>(v))
                                                         : Value::from_float32(v));
  }
  return ext::ProviderResult({Tensor(out, 0, layout)});
}

float twice(float v) { return 2 * v; }
float wrong_for_negatives(float v) { return v < 0 ? v : 2 * v; }

struct Planted {
  std::shared_ptr<const op::OperationDefinition> good_vjp, bad_vjp;
};

// One class with one pattern per planted bug, for two definitions (a correct
// VJP and a wrong one) that share the patterns' bodies.
const Planted& planted() {
  static const Planted p = [] {
    Planted out{define_double("opchk.double", 2.0f), define_double("opchk.double_badvjp", 3.0f)};
    std::vector<ext::KernelPattern> patterns;
    for (const auto& d : {out.good_vjp, out.bad_vjp}) {
      const std::string stem = d == out.good_vjp ? "" : "badvjp_";
      patterns.push_back(pattern(d, stem + "correct", [](const auto& inv) { return fresh<1>(inv, twice); }));
      if (d != out.good_vjp) continue;
      patterns.push_back(pattern(d, "wrong_value", [](const auto& inv) { return fresh<1>(inv, wrong_for_negatives); }));
      patterns.push_back(
          pattern(d, "wrong_dtype", [](const auto& inv) { return fresh<1>(inv, twice, DType::Int32()); }));
      patterns.push_back(pattern(d, "wrong_strides", [](const auto& inv) {
        return fresh<1>(inv, twice, DType::Float32(), /*row_major=*/true);
      }));
      // Writes 2x into the operand's own storage and returns a new view of it.
      patterns.push_back(pattern(d, "unexpected_alias", [](const op::ResolvedInvocation& inv) {
        const Tensor& x = std::get<Tensor>(inv.operands()[0]);
        auto& arena = static_cast<Arena<1>&>(*x.carrier()).arena;
        for (std::int64_t i = 0; i < x.size(); ++i) {
          Value& v = arena[static_cast<std::size_t>(x.offset() + x.layout()(i))];
          v = Value::from_float32(2 * v.f);
        }
        return ext::ProviderResult({Tensor(x.carrier(), x.offset(), x.layout())});
      }));
      // A correct result, but it scribbles on the operand's arena behind the
      // framework's back (no version step).
      patterns.push_back(pattern(d, "unadvertised_mutation", [](const op::ResolvedInvocation& inv) {
        ext::ProviderResult r = fresh<1>(inv, twice);
        const Tensor& x = std::get<Tensor>(inv.operands()[0]);
        auto& arena = static_cast<Arena<1>&>(*x.carrier()).arena;
        if (!arena.empty()) arena[0] = Value::from_float32(-99.0f);
        return r;
      }));
      patterns.push_back(pattern(
          d, "declines_large", [](const auto& inv) { return fresh<1>(inv, twice); },
          [](const op::ResolvedInvocation& inv) { return std::get<Tensor>(inv.operands()[0]).size() <= 4; }));
    }
    ext::register_carrier_definition(
        carrier_class<Arena<1>>(),
        ext::CarrierDefinition(arena_storage<1>(), ext::KernelProvider(std::make_shared<Iface>("1"), patterns)));
    return out;
  }();
  return p;
}

op::OpcheckOptions options_for_arena1() {
  (void)planted();  // the class's definition before its first instance
  op::OpcheckOptions o;
  o.samples = {op::OpcheckSample{{op::SampleTensor{&DType::Float32(), Shape::of({3, 4})}}, {}, "matrix"},
               op::OpcheckSample{{op::SampleTensor{&DType::Float32(), Shape::of({5})}}, {}, "vector"},
               op::OpcheckSample{{op::SampleTensor{&DType::Int32(), Shape::of({2})}}, {}, "int32"}};
  o.carriers = {ext::create<Arena<1>>(0, DType::Float32())};
  return o;
}

const op::OpcheckPatternReport& pattern_report(const op::OpcheckReport& r, const std::string& id) {
  for (const auto& c : r.carriers)
    for (const auto& p : c.patterns)
      if (p.kernel_id == id) return p;
  throw std::runtime_error("no pattern " + id);
}

std::vector<std::string> failed_fields(const op::OpcheckPatternReport& p) {
  std::vector<std::string> out;
  for (const auto& k : p.cases)
    if (k.status == op::OpcheckStatus::FAILED) out.push_back(k.field);
  return out;
}

bool all_are(const std::vector<std::string>& fields, const std::string& want) {
  return !fields.empty() && std::all_of(fields.begin(), fields.end(), [&](const auto& f) { return f == want; });
}

TEST(ReferenceExecution_Opcheck, ACorrectPatternPassesEveryGeneratedCase) {
  const op::OpcheckReport r = op::opcheck(*planted().good_vjp, options_for_arena1());
  ASSERT_EQ(r.carriers.size(), 1u);
  EXPECT_EQ(r.carriers[0].carrier, carrier_class<Arena<1>>().name());
  const auto& correct = pattern_report(r, "correct");
  EXPECT_TRUE(failed_fields(correct).empty()) << op::to_text(r);
  // Every kind of generated input ran: random, edge, strided, transposed, broadcast, empty.
  std::vector<std::string> variants;
  for (const auto& k : correct.cases)
    if (k.status == op::OpcheckStatus::PASSED) variants.push_back(k.variant);
  for (const char* v : {"random", "edge values", "strided", "transposed", "broadcast", "empty (extent 3 -> 0)"})
    EXPECT_NE(std::find(variants.begin(), variants.end(), v), variants.end()) << v << "\n" << op::to_text(r);
  // The Int32 sample's plan has no Float32 pattern: not applicable, never failed.
  EXPECT_TRUE(std::any_of(correct.cases.begin(), correct.cases.end(), [](const op::OpcheckCase& k) {
    return k.sample == "int32" && k.status == op::OpcheckStatus::NOT_APPLICABLE;
  }));
  // The gradient check of the correct VJP passes for both float samples.
  ASSERT_EQ(r.carriers[0].gradients.size(), 2u) << op::to_text(r);
  for (const auto& g : r.carriers[0].gradients) EXPECT_EQ(g.status, op::OpcheckStatus::PASSED) << g.message;
}

TEST(ReferenceExecution_Opcheck, EachPatternRunsAloneSoEveryPlantedBugIsFoundWithItsField) {
  const op::OpcheckReport r = op::opcheck(*planted().good_vjp, options_for_arena1());
  EXPECT_FALSE(r.passed());
  EXPECT_TRUE(all_are(failed_fields(pattern_report(r, "wrong_value")), "values")) << op::to_text(r);
  EXPECT_TRUE(all_are(failed_fields(pattern_report(r, "wrong_dtype")), "dtype")) << op::to_text(r);
  // Strides differ only where the shape has two modes of extent > 1.
  const auto strides = failed_fields(pattern_report(r, "wrong_strides"));
  EXPECT_TRUE(all_are(strides, "layout")) << op::to_text(r);
  // The aliasing view keeps the operand's layout: on compact inputs the alias
  // is what differs; on strided, transposed and broadcast ones the layout
  // already does.
  for (const auto& k : pattern_report(r, "unexpected_alias").cases) {
    if (k.status == op::OpcheckStatus::NOT_APPLICABLE) continue;
    EXPECT_EQ(k.status, op::OpcheckStatus::FAILED) << k.variant;
    const bool compact = k.variant == "random" || k.variant == "edge values" || k.variant.starts_with("empty");
    EXPECT_EQ(k.field, compact ? "alias" : "layout") << k.variant << ": " << k.message;
  }
  EXPECT_TRUE(all_are(failed_fields(pattern_report(r, "unadvertised_mutation")), "mutation")) << op::to_text(r);
}

TEST(ReferenceExecution_Opcheck, ARuntimeDeclineIsReportedButIsNoFailure) {
  const op::OpcheckReport r = op::opcheck(*planted().good_vjp, options_for_arena1());
  const auto& p = pattern_report(r, "declines_large");
  EXPECT_TRUE(failed_fields(p).empty()) << op::to_text(r);
  EXPECT_TRUE(std::any_of(p.cases.begin(), p.cases.end(),
                          [](const op::OpcheckCase& k) { return k.status == op::OpcheckStatus::DECLINED; }));
  EXPECT_TRUE(std::any_of(p.cases.begin(), p.cases.end(),
                          [](const op::OpcheckCase& k) { return k.status == op::OpcheckStatus::PASSED; }));
}

TEST(AutomaticDifferentiation_Opcheck, AWrongVjpFailsTheFiniteDifferenceCheck) {
  const op::OpcheckReport r = op::opcheck(*planted().bad_vjp, options_for_arena1());
  ASSERT_EQ(r.carriers.size(), 1u);
  EXPECT_TRUE(failed_fields(pattern_report(r, "badvjp_correct")).empty()) << op::to_text(r);
  ASSERT_FALSE(r.carriers[0].gradients.empty());
  for (const auto& g : r.carriers[0].gradients) {
    EXPECT_EQ(g.status, op::OpcheckStatus::FAILED) << g.message;
    EXPECT_EQ(g.field, "gradient");
  }
  // Without the gradient check the same report passes.
  op::OpcheckOptions o = options_for_arena1();
  o.gradients = false;
  EXPECT_TRUE(op::opcheck(*planted().bad_vjp, o).passed()) << op::to_text(op::opcheck(*planted().bad_vjp, o));
}

TEST(AutomaticDifferentiation_Opcheck, AVjpReturningTheWrongCountShapeOrDtypeIsNamed) {
  const auto count = op::define_operation(
      "opchk.vjp_count", op::OperationSchema({op::OperandSpec("x", op::OperandKind::TENSOR, true)}),
      same_shape_resolve(), doubling_reference(),
      op::VjpFn([](const op::VJPContext&, std::span<const std::optional<Tensor>> cot) {
        return std::vector<std::optional<Tensor>>{cot[0], cot[0]};
      }));
  const auto shape = op::define_operation(
      "opchk.vjp_shape", op::OperationSchema({op::OperandSpec("x", op::OperandKind::TENSOR, true)}),
      same_shape_resolve(), doubling_reference(),
      op::VjpFn([](const op::VJPContext&, std::span<const std::optional<Tensor>> cot) {
        return std::vector<std::optional<Tensor>>{cot[0]->reshape(Shape::of({cot[0]->size()}))};
      }));
  const auto dtype = op::define_operation(
      "opchk.vjp_dtype", op::OperationSchema({op::OperandSpec("x", op::OperandKind::TENSOR, true)}),
      same_shape_resolve(), doubling_reference(),
      op::VjpFn([](const op::VJPContext&, std::span<const std::optional<Tensor>> cot) {
        return std::vector<std::optional<Tensor>>{
            map_values(*cot[0], *cot[0]->carrier(), [](float v) { return 2 * v; }, DType::Int32())};
      }));
  ext::register_carrier_definition(
      carrier_class<Arena<4>>(),
      ext::CarrierDefinition(arena_storage<4>(),
                             ext::KernelProvider(std::make_shared<Iface>("1"),
                                                 {pattern(count, "k_count", [](const auto& inv) { return fresh<4>(inv, twice); }),
                                                  pattern(shape, "k_shape", [](const auto& inv) { return fresh<4>(inv, twice); }),
                                                  pattern(dtype, "k_dtype", [](const auto& inv) { return fresh<4>(inv, twice); })})));
  for (const auto& [d, field] : {std::pair{count, "vjp"}, std::pair{shape, "gradient shape"}, std::pair{dtype, "gradient dtype"}}) {
    op::OpcheckOptions o;
    o.samples = {op::OpcheckSample{{op::SampleTensor{&DType::Float32(), Shape::of({2, 3})}}, {}, "m"}};
    o.carriers = {ext::create<Arena<4>>(0, DType::Float32())};
    const op::OpcheckReport r = op::opcheck(*d, o);
    ASSERT_EQ(r.carriers.size(), 1u) << op::to_text(r);
    ASSERT_EQ(r.carriers[0].gradients.size(), 1u) << op::to_text(r);
    EXPECT_EQ(r.carriers[0].gradients[0].status, op::OpcheckStatus::FAILED);
    EXPECT_EQ(r.carriers[0].gradients[0].field, field) << op::to_text(r);
    EXPECT_TRUE(failed_fields(r.carriers[0].patterns.at(0)).empty()) << op::to_text(r);  // the kernel itself is right
  }
}

TEST(ReferenceExecution_Opcheck, AnAdvertisingCarrierWithoutAPrototypeIsAFailureNotASilentSkip) {
  const auto d = define_double("opchk.unprototyped", 2.0f);
  ext::register_carrier_definition(
      carrier_class<Arena<2>>(),
      ext::CarrierDefinition(arena_storage<2>(), ext::KernelProvider(std::make_shared<Iface>("1"),
                                                                     {pattern(d, "k", [](const auto& inv) {
                                                                       return fresh<2>(inv, twice);
                                                                     })})));
  op::OpcheckOptions o;
  o.samples = {op::OpcheckSample{{op::SampleTensor{&DType::Float32(), Shape::of({2})}}, {}, ""}};
  const op::OpcheckReport r = op::opcheck(*d, o);
  ASSERT_EQ(r.carriers.size(), 1u);
  ASSERT_TRUE(r.carriers[0].problem.has_value());
  EXPECT_EQ(r.carriers[0].problem->field, "prototype");
  EXPECT_EQ(r.failed(), 1u);
}

TEST(ReferenceExecution_Opcheck, BadArgumentsAreTypedErrors) {
  op::OpcheckOptions o = options_for_arena1();
  EXPECT_THROW(op::opcheck(*op::get_definition("add"), o), ValueError);  // built-ins: the conformance harness
  const auto no_reference = op::define_operation(
      "opchk.no_reference", op::OperationSchema({op::OperandSpec("x", op::OperandKind::TENSOR)}), same_shape_resolve(),
      std::nullopt, op::NON_DIFFERENTIABLE);
  EXPECT_THROW(op::opcheck(*no_reference, o), ValueError);
  o.samples = {op::OpcheckSample{{WeakScalar(1.0)}, {}, ""}};  // a weak scalar where a tensor belongs
  EXPECT_THROW(op::opcheck(*planted().good_vjp, o), ValueError);
  o.samples.clear();
  EXPECT_THROW(op::opcheck(*planted().good_vjp, o), ValueError);  // no samples registered either
  o = options_for_arena1();
  o.carriers = {make_tensor<CPU>({1.0f}, Shape{1}).carrier()};
  EXPECT_THROW(op::opcheck(*planted().good_vjp, o), ValueError);  // a definition-free prototype
}

TEST(ReferenceExecution_Opcheck, RegisteredInputsAreUsedWhenTheOptionsNameNoneAndRegisterOnce) {
  const auto d = define_double("opchk.registered", 2.0f);
  ext::register_carrier_definition(
      carrier_class<Arena<3>>(),
      ext::CarrierDefinition(arena_storage<3>(), ext::KernelProvider(std::make_shared<Iface>("1"),
                                                                     {pattern(d, "k", [](const auto& inv) {
                                                                       return fresh<3>(inv, twice);
                                                                     })})));
  const std::vector<op::OpcheckSample> samples = {
      op::OpcheckSample{{op::SampleTensor{&DType::Float32(), Shape::of({2, 3})}}, {}, "m"}};
  op::register_opcheck_inputs(*d, samples, {ext::create<Arena<3>>(0, DType::Float32())});
  EXPECT_THROW(op::register_opcheck_inputs(*d, samples), ValueError);  // one-shot
  EXPECT_THROW(op::register_opcheck_inputs(*op::get_definition("add"), samples), ValueError);
  const op::OpcheckReport r = op::opcheck(*d);
  EXPECT_TRUE(r.passed()) << op::to_text(r);
  EXPECT_GT(r.count(op::OpcheckStatus::PASSED), 5u);
  EXPECT_NE(op::to_text(r).find("pattern k (built-in, preference 0)"), std::string::npos) << op::to_text(r);
}

// opchk.scale_(x): x *= 2 in place, the result x itself (alias_of 0,
// mutated {0}); NON_DIFFERENTIABLE. Its reference writes its own operand.
std::shared_ptr<const op::OperationDefinition> define_scale_inplace(const std::string& name) {
  return op::define_operation(
      name, op::OperationSchema({op::OperandSpec("x", op::OperandKind::TENSOR)}),
      [](const op::BoundOperationCall& call) {
        const Tensor& x = call.tensor(0);
        OperationPlan plan(call.definition().name(), {OperandPlan::tensor(x.dtype())}, Arithmetic::BINARY32,
                           std::nullopt, nullptr, x.dtype());
        return op::ResolvedInvocation(call, plan, {op::ResultSpec(x.dtype(), x.shape(), x.layout(), 0)}, {0});
      },
      [](const op::ResolvedInvocation& inv) -> op::ReferenceResult {
        const Tensor& x = std::get<Tensor>(inv.operands()[0]);
        const std::vector<Value> v = x.values();
        for (std::int64_t i = 0; i < x.size(); ++i)
          x.carrier()->set_value(x.offset() + x.layout()(i), Value::from_float32(2 * v[static_cast<std::size_t>(i)].f));
        return x;
      },
      op::NON_DIFFERENTIABLE);
}

// An in-place pattern writing factor * x into x through the public path.
ext::KernelPattern scale_inplace_pattern(const std::shared_ptr<const op::OperationDefinition>& d, std::string id,
                                         float factor) {
  return pattern(d, std::move(id), [factor](const op::ResolvedInvocation& inv) {
    const Tensor& x = std::get<Tensor>(inv.operands()[0]);
    const std::vector<Value> v = x.values();
    for (std::int64_t i = 0; i < x.size(); ++i)
      x.carrier()->set_value(x.offset() + x.layout()(i), Value::from_float32(factor * v[static_cast<std::size_t>(i)].f));
    return ext::ProviderResult({x});
  });
}

TEST(ReferenceExecution_Opcheck, AnInPlaceKernelWritingOtherValuesThanTheReferenceFailsOnTheMutationField) {
  // operation-semantics: a carrier agrees with the reference on "aliasing
  // or mutation effects"; the result of an in-place operation is the
  // operand itself, so what differs is the mutation.
  const auto d = define_scale_inplace("opchk.scale_");
  ext::register_carrier_definition(
      carrier_class<Arena<7>>(),
      ext::CarrierDefinition(arena_storage<7>(),
                             ext::KernelProvider(std::make_shared<Iface>("1"),
                                                 {scale_inplace_pattern(d, "inplace_correct", 2.0f),
                                                  scale_inplace_pattern(d, "inplace_wrong_values", 3.0f)})));
  op::OpcheckOptions o;
  o.samples = {op::OpcheckSample{{op::SampleTensor{&DType::Float32(), Shape::of({3, 4})}}, {}, "matrix"}};
  o.carriers = {ext::create<Arena<7>>(0, DType::Float32())};
  const op::OpcheckReport r = op::opcheck(*d, o);
  EXPECT_TRUE(failed_fields(pattern_report(r, "inplace_correct")).empty()) << op::to_text(r);
  EXPECT_GT(pattern_report(r, "inplace_correct").cases.size(), 3u);
  EXPECT_TRUE(all_are(failed_fields(pattern_report(r, "inplace_wrong_values")), "mutation")) << op::to_text(r);
}

TEST(ReferenceExecution_Opcheck, TheReferenceAndTheVjpRunWithGraphConstructionDisabled) {
  // docs/extension.md, "Providers run without a graph": opcheck calls the
  // reference and the VJP directly, as providers.
  static std::vector<bool> reference_saw, vjp_saw;
  const auto d = op::define_operation(
      "opchk.graph_probe", op::OperationSchema({op::OperandSpec("x", op::OperandKind::TENSOR, true)}),
      same_shape_resolve(),
      [](const op::ResolvedInvocation& inv) -> op::ReferenceResult {
        reference_saw.push_back(is_grad_enabled());
        return doubling_reference()(inv);
      },
      op::VjpFn([](const op::VJPContext& c, std::span<const std::optional<Tensor>> cot) {
        vjp_saw.push_back(is_grad_enabled());
        return doubling_vjp(2.0f)(c, cot);
      }));
  ext::register_carrier_definition(
      carrier_class<Arena<8>>(),
      ext::CarrierDefinition(arena_storage<8>(), ext::KernelProvider(std::make_shared<Iface>("1"),
                                                                     {pattern(d, "k", [](const auto& inv) {
                                                                       return fresh<8>(inv, twice);
                                                                     })})));
  op::OpcheckOptions o;
  o.samples = {op::OpcheckSample{{op::SampleTensor{&DType::Float32(), Shape::of({2})}}, {}, "v"}};
  o.carriers = {ext::create<Arena<8>>(0, DType::Float32())};
  const op::OpcheckReport r = op::opcheck(*d, o);
  EXPECT_TRUE(r.passed()) << op::to_text(r);
  ASSERT_FALSE(reference_saw.empty());
  ASSERT_FALSE(vjp_saw.empty());
  EXPECT_TRUE(std::none_of(reference_saw.begin(), reference_saw.end(), [](bool b) { return b; }));
  EXPECT_TRUE(std::none_of(vjp_saw.begin(), vjp_saw.end(), [](bool b) { return b; }));
  EXPECT_TRUE(is_grad_enabled());
}

// A dependent (composite) carrier: its prototype is checked through its
// CompositeProvider, one pseudo-pattern "composite provider".
template <int N>
class Composite final : public ext::DefinedDependentCarrier {
 public:
  explicit Composite(ext::Construction key) : DefinedDependentCarrier(std::move(key)) {}
  std::vector<Value> arena;
};

template <int N>
std::shared_ptr<Carrier> composite_prototype(const std::shared_ptr<const op::OperationDefinition>& d, float (*f)(float)) {
  using C = Composite<N>;
  ext::StorageProvider storage(
      [](const Carrier&, const DType& dt) { return &dt == &DType::Float32(); },
      [](const Carrier& c) { return static_cast<std::int64_t>(static_cast<const C&>(c).arena.size()); },
      [](Carrier& c, std::int64_t n) { static_cast<C&>(c).arena.assign(static_cast<std::size_t>(n), Value::from_float32(0)); },
      [](Carrier& c) { static_cast<C&>(c).arena.clear(); },
      [](const Carrier& c, std::int64_t i) { return static_cast<const C&>(c).arena[static_cast<std::size_t>(i)]; },
      [](Carrier& c, std::int64_t i, const Value& v) { static_cast<C&>(c).arena[static_cast<std::size_t>(i)] = v; });
  const std::string name = d->name();
  ext::CompositeProvider composite(
      [name](const Carrier&) { return std::vector{f32_plan(name)}; },
      [](const Carrier&, const op::ResolvedInvocation& inv) {
        return std::vector<CarrierClass>(inv.results().size(), carrier_class<CPU>());
      },
      [f](const Carrier&, const op::ResolvedInvocation& inv) -> ext::CompositeProvider::Prepared {
        return ext::PreparedComposite([f, inv = &inv]() -> ext::ResultSubmission {
          const Tensor& x = std::get<Tensor>(inv->operands()[0]);
          std::vector<float> v;
          for (std::int64_t i = 0; i < x.size(); ++i) v.push_back(f(read(x, i)));
          return ext::ProviderResult({make_tensor<CPU>(std::span<const float>(v), x.shape())});
        });
      });
  ext::register_carrier_definition(carrier_class<C>(), ext::CarrierDefinition(storage, std::nullopt, {}, composite));
  return ext::create<C>(0, DType::Float32());
}

TEST(ReferenceExecution_Opcheck, ADependentCarrierIsCheckedThroughItsCompositeProvider) {
  const auto good = define_double("opchk.composite_good", 2.0f);
  const auto bad = define_double("opchk.composite_bad", 2.0f);
  op::OpcheckOptions o;
  o.samples = {op::OpcheckSample{{op::SampleTensor{&DType::Float32(), Shape::of({2, 3})}}, {}, "m"}};
  o.carriers = {composite_prototype<5>(good, twice)};
  const op::OpcheckReport r = op::opcheck(*good, o);
  ASSERT_EQ(r.carriers.size(), 1u) << op::to_text(r);
  ASSERT_EQ(r.carriers[0].patterns.size(), 1u);
  EXPECT_EQ(r.carriers[0].patterns[0].kernel_id, "composite provider");
  EXPECT_TRUE(r.passed()) << op::to_text(r);
  EXPECT_GT(r.count(op::OpcheckStatus::PASSED), 5u);
  o.carriers = {composite_prototype<6>(bad, wrong_for_negatives)};
  const op::OpcheckReport rb = op::opcheck(*bad, o);
  ASSERT_EQ(rb.carriers.size(), 1u) << op::to_text(rb);
  EXPECT_TRUE(all_are(failed_fields(rb.carriers[0].patterns[0]), "values")) << op::to_text(rb);
}

}  // namespace
