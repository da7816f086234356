// carrier.dispatch_op and Operation (core-concepts.md 1.8 and 6.7; upstream
// carrier-dispatch), and definition-free custom carriers that compute
// through their dispatch hook (carrier-extension.md R13.1). Suites are named
// after the requirement they check.
#include <strideweave/autograd.h>
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <vector>

#include "support/expect_exactly.h"

namespace {

using namespace strideweave;

std::vector<float> floats(const Tensor& t) { return TypedTensor<float>(t).values(); }
Tensor F(std::initializer_list<float> v, const Shape& s) { return make_tensor<CPU>(v, s); }
std::vector<operation::CallOperand> operands(std::initializer_list<operation::CallOperand> o) { return o; }

// ---- dispatch_op

TEST(CarrierDispatch_DispatchIsAnInstanceOperation, EveryDispatchReturnsAFreshOperationWithExactClassMetadata) {
  const Tensor x = F({1, 2}, Shape{2});
  const std::shared_ptr<Operation> a = x.carrier()->dispatch_op("add");
  const std::shared_ptr<Operation> b = x.carrier()->dispatch_op("add");
  ASSERT_TRUE(a && b);
  EXPECT_NE(a, b);
  EXPECT_EQ(a->_operation_name(), std::optional<std::string>("add"));
  EXPECT_EQ(a->_dispatch_carrier_class(), std::optional(carrier_class<CPU>()));
  const std::shared_ptr<Operation> g = make_tensor<Generic>({1.0f}, Shape{1}).carrier()->dispatch_op("add");
  EXPECT_EQ(g->_dispatch_carrier_class(), std::optional(carrier_class<Generic>()));
}

TEST(CarrierDispatch_DispatchIsAnInstanceOperation, AnUnknownNameAndAStorageOnlyClassAreNotImplementedError) {
  const Tensor x = F({1, 2}, Shape{2});
  EXPECT_THROW_EXACTLY((void)x.carrier()->dispatch_op("no_such_operation"), NotImplementedError);
  const auto file = FileBacked::create(std::nullopt, DType::Float32());
  EXPECT_THROW_EXACTLY((void)file->dispatch_op("add"), NotImplementedError);
}

TEST(CarrierDispatch_EveryDispatchReturnsAFreshOperation, ForwardRunsOnceAndItsResultsNodeIsThatOperation) {
  const Tensor x = F({1, 2}, Shape{2}), w = F({3, 4}, Shape{2});
  const std::shared_ptr<Operation> op = x.carrier()->dispatch_op("mul");
  const std::vector<Tensor> y = op->forward(operands({x, w}));
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(floats(y[0]), (std::vector<float>{3, 8}));
  EXPECT_EQ(y[0].autograd_ctx(), op);  // core-concepts 6.2: the result's autograd_ctx is the call
  ASSERT_EQ(op->inputs().size(), 2u);
  EXPECT_TRUE(op->inputs()[0].is(x));
  EXPECT_TRUE(op->inputs()[1].is(w));
  EXPECT_THROW_EXACTLY(op->forward(operands({x, w})), RuntimeError);  // single use
  // The node works as any recorded call's.
  reduce_sum(y[0], {0}, true).backward();
  EXPECT_EQ(floats(*x.grad()), (std::vector<float>{3, 4}));
}

TEST(CarrierDispatch_ExecutionOptionsAreValidatedAtTheDispatchedBoundary, OptionsBoundToAnotherOperationAreValueError) {
  const Tensor x = F({1, 2, 3, 4}, Shape{2, 2});
  const OperationExecutionOptions for_sum("reduce_sum", &DType::Float64());
  const std::shared_ptr<Operation> mm = x.carrier()->dispatch_op("matmul");
  EXPECT_THROW_EXACTLY(mm->forward(operands({x, x}), for_sum), ValueError);
  const std::vector<Tensor> s = x.carrier()->dispatch_op("reduce_sum")->forward(operands({x}), for_sum);
  EXPECT_EQ(floats(s[0]), (std::vector<float>{10}));
}

TEST(CarrierDispatch_TypedAndDispatched, TypedFunctionsAndDispatchOpRecordTheSameMetadata) {
  const Tensor x = F({1, 2}, Shape{2});
  const Tensor typed = mul(x, 2.0);
  const Tensor dispatched = x.carrier()->dispatch_op("mul")->forward(operands({x, WeakScalar(2.0)}))[0];
  EXPECT_EQ(floats(typed), floats(dispatched));
  EXPECT_EQ(typed.autograd_ctx()->_operation_name(), dispatched.autograd_ctx()->_operation_name());
  EXPECT_EQ(typed.autograd_ctx()->_dispatch_carrier_class(), dispatched.autograd_ctx()->_dispatch_carrier_class());
}

TEST(CarrierDispatch_Views, AViewIsADispatchNameWhoseOperationIsTheViewsNode) {
  const Tensor x = F({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  const std::shared_ptr<Operation> op = x.carrier()->dispatch_op("permute");
  const Tensor y = op->forward(operands({x}), {{"perm", std::vector<std::int64_t>{1, 0}}})[0];
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(y.carrier(), x.carrier());
  EXPECT_EQ(y.autograd_ctx(), op);
}

TEST(CarrierDispatch_NeverDispatched, AnOperationNeverDispatchedCannotForward) {
  auto op = std::make_shared<Operation>();
  EXPECT_FALSE(op->_operation_name());
  EXPECT_THROW_EXACTLY(op->forward(operands({F({1}, Shape{1})})), NotImplementedError);
}

// ---- definition-free custom carriers: the dispatch hook (R13.1)

// A definition-free carrier storing floats, whose dispatch hook supplies an
// `add` kernel (and nothing else).
class Hooked final : public Carrier {
 public:
  explicit Hooked(std::vector<float> v) : Carrier(DType::Float32(), true), values_(std::move(v)) {}
  ~Hooked() override { ++destroyed; }
  bool supports_storage_dtype(const DType& d) const noexcept override { return &d == &DType::Float32(); }
  static inline std::atomic<int> allocations{0}, kernel_runs{0}, destroyed{0};
  // When set, the add kernel keeps a copy of its tensor operands here.
  static inline bool keep_operands = false;
  static inline std::vector<Tensor> kept;

 protected:
  std::int64_t storage_size() const noexcept override { return static_cast<std::int64_t>(values_.size()); }
  Value read_slot(std::int64_t i) const override { return Value::from_float32(values_[static_cast<std::size_t>(i)]); }
  void write_slot(std::int64_t i, const Value& v) override { values_[static_cast<std::size_t>(i)] = v.f; }
  void release_storage() noexcept override { values_.clear(); }
  std::shared_ptr<Carrier> make_like(std::int64_t n, bool, const SimpleDType&, bool) const override {
    ++allocations;
    return std::make_shared<Hooked>(std::vector<float>(static_cast<std::size_t>(n)));
  }
  std::shared_ptr<Operation> _dispatch_op(std::string_view name) const override {
    if (name == "add") return std::make_shared<AddKernel>();
    return Carrier::_dispatch_op(name);
  }

 private:
  struct AddKernel final : Operation {
    void _forward(const DispatchedCall& call) override {
      ++kernel_runs;
      if (keep_operands) kept.assign({call.tensor(0), call.tensor(1)});
      const Tensor& a = call.tensor(0);
      const Tensor& b = call.tensor(1);
      for (std::int64_t k = 0; k < call.output().size(); ++k)
        call.output().carrier()->set_value(call.output().offset() + call.output().layout()(k),
                                           Value::from_float32(a.at_ordinal(k).f + b.at_ordinal(k).f));
    }
  };
  std::vector<float> values_;
};

Tensor hooked(std::vector<float> v) {
  const auto n = static_cast<std::int64_t>(v.size());
  return Tensor(std::make_shared<Hooked>(std::move(v)), Shape{n});
}

void declare_hooked() {
  static const bool declared = [] {
    const OperationPlan add_plan = resolve_operation_plan("add", {DType::Float32(), DType::Float32()});
    const OperationPlan mul_plan = resolve_operation_plan("mul", {DType::Float32(), DType::Float32()});
    const OperationCapability caps[] = {OperationCapability::from_plan(add_plan),
                                        OperationCapability::from_plan(mul_plan)};
    register_operation_capabilities(carrier_class<Hooked>(), caps);
    return true;
  }();
  (void)declared;
}

TEST(CarrierExtension_R13_1_DefinitionFreeCustomCarriers, ADeclaredBuiltInRunsThroughTheHookByOrdinaryDispatch) {
  declare_hooked();
  const Tensor a = hooked({1, 2}), b = hooked({10, 20});
  const int runs = Hooked::kernel_runs.load();
  const Tensor c = add(a, b);
  EXPECT_EQ(Hooked::kernel_runs.load(), runs + 1);
  EXPECT_EQ(c.carrier_type(), carrier_class<Hooked>());
  EXPECT_EQ(floats(c), (std::vector<float>{11, 22}));
  // The hook's Operation is the call's node, with the ordinary metadata.
  ASSERT_TRUE(c.autograd_ctx());
  EXPECT_EQ(c.autograd_ctx()->_dispatch_carrier_class(), std::optional(carrier_class<Hooked>()));
  // The same hook answers dispatch_op; by name reaches it too.
  EXPECT_EQ(floats(a.carrier()->dispatch_op("add")->forward(operands({a, b}))[0]), (std::vector<float>{11, 22}));
  EXPECT_EQ(floats(call_operation("add", std::vector<CallOperand>{a, b}).results[0]), (std::vector<float>{11, 22}));
}

// R13.1: the hook receives the call's operands; it may keep them. With grad
// mode off the front end lends a typed call's operands to the kernel it
// runs (no reference count touched); a hook receives owned handles, so what
// it keeps keeps its tensors alive after the caller's handles are gone.
TEST(CarrierExtension_R13_1_DefinitionFreeCustomCarriers, AHookMayKeepItsOperandsBeyondTheCall) {
  declare_hooked();
  const NoGradGuard inference;
  std::optional<Tensor> a = hooked({1, 2}), b = hooked({10, 20});
  Hooked::keep_operands = true;
  (void)add(*a, *b);
  Hooked::keep_operands = false;
  ASSERT_EQ(Hooked::kept.size(), 2u);
  const int destroyed = Hooked::destroyed.load();
  a.reset();
  b.reset();
  EXPECT_EQ(Hooked::destroyed.load(), destroyed) << "the kept operands did not own their tensors";
  if (Hooked::destroyed.load() == destroyed) {  // reading a dangling handle would be undefined
    EXPECT_EQ(floats(Hooked::kept[0]), (std::vector<float>{1, 2}));
    EXPECT_EQ(floats(Hooked::kept[1]), (std::vector<float>{10, 20}));
  }
  Hooked::kept.clear();
  EXPECT_EQ(Hooked::destroyed.load(), destroyed + 2);
}

TEST(CarrierExtension_R13_1_DefinitionFreeCustomCarriers, TheGateComesFirstAndAMissingImplementationIsUnsupported) {
  declare_hooked();
  const Tensor a = hooked({1, 2});
  const int allocations = Hooked::allocations.load();
  // Not declared: the gate refuses before the hook or any allocation.
  EXPECT_THROW_EXACTLY(relu(a), UnsupportedOperationPlan);
  // Declared, but the hook has no mul: UnsupportedOperationPlan (never a
  // plain NotImplementedError), still before any allocation.
  try {
    (void)mul(a, a);
    ADD_FAILURE() << "expected UnsupportedOperationPlan";
  } catch (const UnsupportedOperationPlan& e) {
    EXPECT_NE(std::string(e.what()).find("dispatch hook"), std::string::npos) << e.what();
  }
  EXPECT_EQ(Hooked::allocations.load(), allocations);
  EXPECT_EQ(a.carrier()->version(), 0u);
}

TEST(CarrierExtension_R13_1_DefinitionFreeCustomCarriers, AHookReturningAnAlreadyDispatchedOperationIsTypeError) {
  struct Reuser final : Carrier {
    Reuser() : Carrier(DType::Float32(), true) {}
    bool supports_storage_dtype(const DType& d) const noexcept override { return &d == &DType::Float32(); }
    std::shared_ptr<Operation> cached = std::make_shared<Operation>();

   protected:
    std::int64_t storage_size() const noexcept override { return 0; }
    Value read_slot(std::int64_t) const override { return Value::from_float32(0); }
    void write_slot(std::int64_t, const Value&) override {}
    void release_storage() noexcept override {}
    std::shared_ptr<Carrier> make_like(std::int64_t, bool, const SimpleDType&, bool) const override {
      return std::make_shared<Reuser>();
    }
    std::shared_ptr<Operation> _dispatch_op(std::string_view) const override { return cached; }
  };
  const auto c = std::make_shared<Reuser>();
  const std::shared_ptr<Operation> first = c->dispatch_op("add");
  EXPECT_EQ(first, c->cached);
  EXPECT_THROW_EXACTLY((void)c->dispatch_op("mul"), TypeError);
  EXPECT_EQ(first->_operation_name(), std::optional<std::string>("add"));  // the first metadata stays
}

}  // namespace
