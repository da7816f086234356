// carrier-extension.md: the public extension surface, requirement by
// requirement (suite name = requirement, test name = rule or scenario).
// Registries are process-wide and one-shot, so every test declares its own
// carrier classes (Arena<N>, Composite<N> with a unique N).
#include <strideweave/strideweave.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using namespace strideweave;
namespace ext = strideweave::extension;
namespace op = strideweave::operation;

// ---------------------------------------------------------------- fixtures

// A definition-backed independent carrier whose provider keeps its slots in
// a separate arena (a vector per instance) and counts its calls.
struct ArenaCounters {
  std::atomic<int> allocate{0}, release{0}, read{0}, write{0}, supports{0};
};

template <int N>
class Arena final : public ext::DefinedCarrier {
 public:
  explicit Arena(ext::Construction key) : DefinedCarrier(std::move(key)) {}
  std::vector<Value> slots;  // the provider's arena (a separate resource: R3.6)
  static ArenaCounters counters;
};
template <int N>
ArenaCounters Arena<N>::counters;

template <int N>
ext::StorageProvider arena_storage(bool elementwise_fallback = false) {
  using A = Arena<N>;
  return ext::StorageProvider(
      [](const Carrier&, const DType& d) {
        ++A::counters.supports;
        return &d == &DType::Float32() || &d == &DType::Int32();
      },
      [](const Carrier& c) { return static_cast<std::int64_t>(static_cast<const A&>(c).slots.size()); },
      [](Carrier& c, std::int64_t n) {
        ++A::counters.allocate;
        auto& a = static_cast<A&>(c);
        a.slots.assign(static_cast<std::size_t>(n), *storage_zero(a.dtype()));
      },
      [](Carrier& c) {
        ++A::counters.release;
        static_cast<A&>(c).slots.clear();
      },
      [](const Carrier& c, std::int64_t i) {
        ++A::counters.read;
        return static_cast<const A&>(c).slots[static_cast<std::size_t>(i)];
      },
      [](Carrier& c, std::int64_t i, const Value& v) {
        ++A::counters.write;
        static_cast<A&>(c).slots[static_cast<std::size_t>(i)] = v;
      },
      elementwise_fallback);
}

// A definition-backed dependent carrier: its reach comes from the composite
// provider, per instance.
template <int N>
class Composite final : public ext::DefinedDependentCarrier {
 public:
  Composite(ext::Construction key, std::vector<OperationCapability> capabilities)
      : DefinedDependentCarrier(std::move(key)), reach(std::move(capabilities)) {}
  std::vector<OperationCapability> reach;
  std::vector<Value> slots;
};

template <int N>
ext::StorageProvider composite_storage() {
  using C = Composite<N>;
  return ext::StorageProvider(
      [](const Carrier&, const DType& d) { return &d == &DType::Float32(); },
      [](const Carrier& c) { return static_cast<std::int64_t>(static_cast<const C&>(c).slots.size()); },
      [](Carrier& c, std::int64_t n) { static_cast<C&>(c).slots.assign(static_cast<std::size_t>(n), Value::from_float32(0)); },
      [](Carrier& c) { static_cast<C&>(c).slots.clear(); },
      [](const Carrier& c, std::int64_t i) { return static_cast<const C&>(c).slots[static_cast<std::size_t>(i)]; },
      [](Carrier& c, std::int64_t i, const Value& v) { static_cast<C&>(c).slots[static_cast<std::size_t>(i)] = v; });
}

template <int N>
ext::CompositeProvider composite_provider() {
  using C = Composite<N>;
  return ext::CompositeProvider(
      [](const Carrier& c) { return static_cast<const C&>(c).reach; },
      [](const Carrier&, const op::ResolvedInvocation& inv) {
        return std::vector<CarrierClass>(inv.results().size(), carrier_class<CPU>());
      },
      [](const Carrier&, const op::ResolvedInvocation&) -> ext::CompositeProvider::Prepared {
        return ext::Unsupported("the test composite prepares nothing");
      });
}

// A plain, definition-free custom carrier (its own storage hooks).
class PlainCarrier final : public Carrier {
 public:
  PlainCarrier() : Carrier(DType::Float32(), true) {}
  bool supports_storage_dtype(const DType& d) const noexcept override { return &d == &DType::Float32(); }

 protected:
  std::int64_t storage_size() const noexcept override { return 0; }
  Value read_slot(std::int64_t) const override { return Value::from_float32(0); }
  void write_slot(std::int64_t, const Value&) override {}
  void release_storage() noexcept override {}
  std::shared_ptr<Carrier> make_like(std::int64_t, bool, const SimpleDType&, bool) const override {
    return std::make_shared<PlainCarrier>();
  }
};

class JitInterface final : public ext::KernelExecutionInterface {
 public:
  using KernelExecutionInterface::KernelExecutionInterface;
};
class OtherInterface final : public ext::KernelExecutionInterface {
 public:
  using KernelExecutionInterface::KernelExecutionInterface;
};

std::shared_ptr<const ext::KernelExecutionInterface> jit(const char* version = "1") {
  return std::make_shared<const JitInterface>(version);
}

// The unary user-defined operation the patterns implement.
std::shared_ptr<const op::OperationDefinition> scale_op() {
  static const auto definition = op::define_operation(
      "exttest.scale", op::OperationSchema({op::OperandSpec("x", op::OperandKind::TENSOR, true)}),
      [](const op::BoundOperationCall& call) {
        const Tensor& x = call.tensor(0);
        OperationPlan plan(call.definition().name(), {OperandPlan::tensor(x.dtype(), x.dtype())}, Arithmetic::BINARY32,
                           std::nullopt, nullptr, x.dtype());
        return op::ResolvedInvocation(call, plan, {op::ResultSpec::compact(x.dtype(), Shape::of(x.shape().extents()))});
      },
      std::nullopt, op::NON_DIFFERENTIABLE);
  return definition;
}

OperationCapability scale_plan(const SimpleDType& d) {
  return OperationCapability::from_plan(
      OperationPlan("exttest.scale", {OperandPlan::tensor(d, d)}, Arithmetic::BINARY32, std::nullopt, nullptr, d));
}

ext::KernelPattern pattern(std::string id, std::vector<OperationCapability> plans, std::int64_t preference = 0) {
  return ext::KernelPattern(scale_op(), std::move(plans), std::move(id),
                            [](const op::ResolvedInvocation&, const ext::KernelExecutionInterface&)
                                -> ext::KernelPattern::Prepared { return ext::Unsupported("not in this test"); },
                            preference);
}

ext::StorageProvider::Read read_float = [](const Carrier&, std::int64_t) { return Value::from_float32(0); };

// ---------------------------------------------------------------- R1

TEST(CarrierExtension_R1_ImportSurface, TopLevelReExportsAreTheSameEntities) {
  static_assert(std::is_same_v<strideweave::CarrierDefinition, ext::CarrierDefinition>);
  static_assert(std::is_same_v<strideweave::StorageProvider, ext::StorageProvider>);
  static_assert(std::is_same_v<strideweave::KernelProvider, ext::KernelProvider>);
  static_assert(std::is_same_v<strideweave::KernelExecutionInterface, ext::KernelExecutionInterface>);
  static_assert(std::is_same_v<strideweave::KernelPack, ext::KernelPack>);
  static_assert(std::is_same_v<strideweave::KernelPattern, ext::KernelPattern>);
  static_assert(std::is_same_v<strideweave::Unsupported, ext::Unsupported>);
  static_assert(std::is_same_v<strideweave::TransferRoute, ext::TransferRoute>);
  static_assert(std::is_same_v<strideweave::CompositeProvider, ext::CompositeProvider>);
  static_assert(std::is_same_v<strideweave::CarrierFacet, ext::CarrierFacet>);
  EXPECT_EQ(&strideweave::register_carrier_definition, &ext::register_carrier_definition);
  EXPECT_EQ(&strideweave::register_kernel_pack, &ext::register_kernel_pack);
}

// ---------------------------------------------------------------- R2

struct FacetA final : ext::CarrierFacet {
  int value = 7;
};
struct FacetB final : ext::CarrierFacet {};

TEST(CarrierExtension_R2_DefinitionIsImmutable, DuplicateRoutePairIsValueError) {
  auto route = [](const char* id) {
    return ext::TransferRoute(carrier_class<Arena<200>>(), carrier_class<CPU>(), id,
                              ext::TransferProvider([](const ext::TransferRequest&) -> ext::TransferProvider::Prepared {
                                return ext::Unsupported("no");
                              }));
  };
  EXPECT_THROW(ext::CarrierDefinition(arena_storage<200>(), std::nullopt, {route("a"), route("b")}), ValueError);
}

TEST(CarrierExtension_R2_DefinitionIsImmutable, TwoFacetsOfOneExactTypeAreValueErrorAndNullIsTypeError) {
  EXPECT_THROW(ext::CarrierDefinition(arena_storage<201>(), std::nullopt, {}, std::nullopt,
                                      {std::make_shared<FacetA>(), std::make_shared<FacetA>()}),
               ValueError);
  EXPECT_THROW(ext::CarrierDefinition(arena_storage<201>(), std::nullopt, {}, std::nullopt, {nullptr}), TypeError);
  EXPECT_NO_THROW(ext::CarrierDefinition(arena_storage<201>(), std::nullopt, {}, std::nullopt,
                                         {std::make_shared<FacetA>(), std::make_shared<FacetB>()}));
}

TEST(CarrierExtension_R2_Registration, IneligibleClassesAreTypeErrors) {
  EXPECT_THROW(ext::register_carrier_definition(carrier_class<int>(), ext::CarrierDefinition(arena_storage<202>())),
               TypeError);
  EXPECT_THROW(ext::register_carrier_definition(carrier_class<Carrier>(), ext::CarrierDefinition(arena_storage<202>())),
               TypeError);
  // R2.5 / R13.2: shipped classes reject definitions.
  EXPECT_THROW(ext::register_carrier_definition(carrier_class<CPU>(), ext::CarrierDefinition(arena_storage<202>())),
               TypeError);
  EXPECT_THROW(ext::register_carrier_definition(carrier_class<Generic>(), ext::CarrierDefinition(arena_storage<202>())),
               TypeError);
  EXPECT_THROW(ext::register_carrier_definition(carrier_class<FileBacked>(),
                                                ext::CarrierDefinition(arena_storage<202>())),
               TypeError);
  // Framework bases are not concrete classes (R2.3).
  EXPECT_THROW(ext::register_carrier_definition(carrier_class<ext::DefinedCarrier>(),
                                                ext::CarrierDefinition(arena_storage<202>())),
               TypeError);
  EXPECT_THROW(ext::register_carrier_definition(carrier_class<ext::DefinedDependentCarrier>(),
                                                ext::CarrierDefinition(arena_storage<202>())),
               TypeError);
  // A definition-free custom class keeps its own storage hooks.
  EXPECT_THROW(ext::register_carrier_definition(carrier_class<PlainCarrier>(),
                                                ext::CarrierDefinition(arena_storage<202>())),
               TypeError);
  EXPECT_EQ(ext::carrier_definition(carrier_class<PlainCarrier>()), nullptr);
}

TEST(CarrierExtension_R2_Registration, ClassWithADefinitionFreeDeclarationIsRejected) {
  const OperationCapability cap = scale_plan(DType::Float32());
  register_operation_capabilities(carrier_class<Arena<203>>(), std::span(&cap, 1));
  EXPECT_THROW(ext::register_carrier_definition(carrier_class<Arena<203>>(), ext::CarrierDefinition(arena_storage<203>())),
               TypeError);
  EXPECT_EQ(ext::carrier_definition(carrier_class<Arena<203>>()), nullptr);
}

TEST(CarrierExtension_R2_Registration, AlreadyObservedClassIsRejected) {
  (void)capabilities_for_carrier_class(carrier_class<Arena<204>>());  // sealed empty
  EXPECT_THROW(ext::register_carrier_definition(carrier_class<Arena<204>>(), ext::CarrierDefinition(arena_storage<204>())),
               TypeError);
}

TEST(CarrierExtension_R2_Registration, RouteFromAnotherClassIsTypeErrorAndNothingIsPublished) {
  ext::TransferRoute foreign(carrier_class<CPU>(), carrier_class<Arena<205>>(), "in",
                             ext::TransferProvider([](const ext::TransferRequest&) -> ext::TransferProvider::Prepared {
                               return ext::Unsupported("no");
                             }));
  EXPECT_THROW(ext::register_carrier_definition(carrier_class<Arena<205>>(),
                                                ext::CarrierDefinition(arena_storage<205>(), std::nullopt, {foreign})),
               TypeError);
  EXPECT_EQ(ext::carrier_definition(carrier_class<Arena<205>>()), nullptr);
  // The rejected registration claimed nothing: a valid one still succeeds.
  EXPECT_NO_THROW(ext::register_carrier_definition(carrier_class<Arena<205>>(), ext::CarrierDefinition(arena_storage<205>())));
}

TEST(CarrierExtension_R2_Registration, SubclassOfADefinitionBackedClassInheritsNothing) {
  struct Base : ext::DefinedCarrier {
    explicit Base(ext::Construction key) : DefinedCarrier(std::move(key)) {}
  };
  struct Sub final : Base {
    explicit Sub(ext::Construction key) : Base(std::move(key)) {}
  };
  ext::register_carrier_definition(carrier_class<Base>(), ext::CarrierDefinition(arena_storage<206>()));
  EXPECT_NE(ext::carrier_definition(carrier_class<Base>()), nullptr);
  EXPECT_EQ(ext::carrier_definition(carrier_class<Sub>()), nullptr);
  EXPECT_THROW(ext::create<Sub>(2, DType::Float32()), TypeError);
}

// ---------------------------------------------------------------- R3

TEST(CarrierExtension_R3_StorageProvider, EmptyCallableIsTypeError) {
  auto ok = arena_storage<300>();
  EXPECT_THROW(ext::StorageProvider(nullptr, ok.physical_size(), ok.allocate(), ok.release(), ok.read(), ok.write()),
               TypeError);
  EXPECT_THROW(ext::StorageProvider(ok.supports_dtype(), ok.physical_size(), ok.allocate(), ok.release(), nullptr,
                                    ok.write()),
               TypeError);
}

TEST(CarrierExtension_R3_StorageProvider, InstancesStoreThroughTheProviderWithVersions) {
  using A = Arena<301>;
  ext::register_carrier_definition(carrier_class<A>(), ext::CarrierDefinition(arena_storage<301>()));
  const auto a = ext::create<A>(3, DType::Float32());
  EXPECT_EQ(a->exact_class(), carrier_class<A>());
  EXPECT_EQ(a->size(), 3);
  EXPECT_EQ(A::counters.allocate.load(), 1);
  EXPECT_EQ(a->version(), 0u);
  a->set_value(1, Value::from_float32(2.5f));
  EXPECT_EQ(a->version(), 1u);
  EXPECT_EQ(a->get_value(1).f, 2.5f);
  EXPECT_EQ(a->slots[1].f, 2.5f);  // the provider's arena holds it
  // The framework validates index and kind before the provider sees them.
  const int writes = A::counters.write.load();
  EXPECT_THROW(a->set_value(3, Value::from_float32(1)), IndexError);
  EXPECT_THROW(a->set_value(0, Value::from_int32(1)), TypeError);
  EXPECT_EQ(A::counters.write.load(), writes);
  EXPECT_EQ(a->version(), 1u);
  // new_like and allocate_like build the same exact class.
  const auto b = a->allocate_like(5);
  EXPECT_EQ(b->exact_class(), carrier_class<A>());
  EXPECT_EQ(b->size(), 5);
  const std::vector<Value> values{Value::from_int32(4), Value::from_int32(5)};
  const auto c = a->new_like(values, false, &DType::Int32());
  EXPECT_EQ(c->get_value(1).i, 5);
  EXPECT_FALSE(c->is_mutable());
  // Release: once, idempotent; dtype queries still answer afterwards.
  a->release();
  a->release();
  EXPECT_EQ(A::counters.release.load(), 1);
  EXPECT_THROW(a->get_value(0), RuntimeError);
  EXPECT_TRUE(a->supports_storage_dtype(DType::Int32()));
  EXPECT_FALSE(a->supports_storage_dtype(DType::Bool()));
}

TEST(CarrierExtension_R3_StorageProvider, UnsupportedDTypeRejectsConstructionBeforeAllocation) {
  using A = Arena<302>;
  ext::register_carrier_definition(carrier_class<A>(), ext::CarrierDefinition(arena_storage<302>()));
  EXPECT_THROW(ext::create<A>(2, DType::Bool()), TypeError);
  EXPECT_EQ(A::counters.allocate.load(), 0);
  EXPECT_THROW(ext::create<A>(-1, DType::Float32()), ValueError);
  EXPECT_THROW(ext::create<A>(2, DType::Any()), ValueError);
  // A registered encoding without an element representation (int8) cannot
  // be stored, whatever supports_dtype says.
  EXPECT_THROW(ext::create<A>(2, DType::from_name("int8")), ValueError);
}

template <int N>
ext::StorageProvider lying_storage(std::int64_t reported, std::atomic<int>* releases) {
  auto base = arena_storage<N>();
  return ext::StorageProvider(
      base.supports_dtype(), [reported](const Carrier&) { return reported; }, base.allocate(),
      [releases](Carrier&) { ++*releases; }, base.read(), base.write());
}

TEST(CarrierExtension_R3_StorageProvider, PhysicalSizeMismatchIsValueErrorAndStorageIsReleased) {
  static std::atomic<int> releases{0};
  ext::register_carrier_definition(carrier_class<Arena<303>>(), ext::CarrierDefinition(lying_storage<303>(7, &releases)));
  EXPECT_THROW(ext::create<Arena<303>>(2, DType::Float32()), ValueError);
  EXPECT_EQ(releases.load(), 1);
  static std::atomic<int> releases_negative{0};
  ext::register_carrier_definition(carrier_class<Arena<304>>(),
                                   ext::CarrierDefinition(lying_storage<304>(-1, &releases_negative)));
  EXPECT_THROW(ext::create<Arena<304>>(2, DType::Float32()), ValueError);
  EXPECT_EQ(releases_negative.load(), 1);
}

TEST(CarrierExtension_R3_StorageProvider, ProviderExceptionsPropagateAndLeaveStateUnchanged) {
  using A = Arena<305>;
  auto base = arena_storage<305>();
  static std::atomic<bool> fail_release{true};
  ext::register_carrier_definition(
      carrier_class<A>(),
      ext::CarrierDefinition(ext::StorageProvider(
          base.supports_dtype(), base.physical_size(), base.allocate(),
          [](Carrier& c) {
            if (fail_release.load()) throw RuntimeError("device busy");
            static_cast<A&>(c).slots.clear();
          },
          [](const Carrier& c, std::int64_t i) {
            if (i == 1) throw RuntimeError("read fault");
            return static_cast<const A&>(c).slots[static_cast<std::size_t>(i)];
          },
          [](Carrier&, std::int64_t, const Value&) { throw ValueError("write refused"); })));
  const auto a = ext::create<A>(2, DType::Float32());
  EXPECT_THROW(a->get_value(1), RuntimeError);
  EXPECT_THROW(a->set_value(0, Value::from_float32(1)), ValueError);
  EXPECT_EQ(a->version(), 0u);  // a failed write advances nothing
  EXPECT_THROW(a->release(), RuntimeError);
  EXPECT_FALSE(a->is_released());  // still live: the storage was not relinquished
  EXPECT_EQ(a->get_value(0).f, 0.0f);
  fail_release = false;
  a->release();
  EXPECT_TRUE(a->is_released());
}

TEST(CarrierExtension_R3_StorageProvider, ReadReturningTheWrongKindIsTypeError) {
  using A = Arena<306>;
  auto base = arena_storage<306>();
  ext::register_carrier_definition(
      carrier_class<A>(), ext::CarrierDefinition(ext::StorageProvider(
                              base.supports_dtype(), base.physical_size(), base.allocate(), base.release(),
                              [](const Carrier&, std::int64_t) { return Value::from_int32(3); }, base.write())));
  const auto a = ext::create<A>(1, DType::Float32());
  EXPECT_THROW(a->get_value(0), TypeError);
}

// ---------------------------------------------------------------- R4

TEST(CarrierExtension_R4_ProviderCompletion, DeferredWaitRunsOnceAndEveryWaiterSeesTheSameResult) {
  std::atomic<int> runs{0};
  const auto c = ext::ProviderCompletion<int>::deferred([&] {
    ++runs;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return 42;
  });
  EXPECT_FALSE(c.done());
  std::vector<std::thread> threads;
  std::atomic<int> sum{0};
  for (int i = 0; i < 8; ++i) threads.emplace_back([&] { sum += c.wait(); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(sum.load(), 8 * 42);
  EXPECT_TRUE(c.done());
  EXPECT_EQ(c.wait(), 42);
}

TEST(CarrierExtension_R4_ProviderCompletion, FailureRethrowsTheSameExceptionObject) {
  const auto c = ext::ProviderCompletion<void>::deferred([] { throw RuntimeError("EIO"); });
  const void* first = nullptr;
  for (int i = 0; i < 2; ++i) {
    try {
      c.wait();
      FAIL() << "wait() must rethrow";
    } catch (const RuntimeError& e) {
      if (!first) first = &e;
      EXPECT_EQ(first, &e);
    }
  }
  EXPECT_TRUE(c.done());
}

TEST(CarrierExtension_R4_ProviderCompletion, PromiseSettlesOnceFromAnotherThread) {
  ext::ProviderPromise<int> promise;
  const auto c = promise.completion();
  EXPECT_FALSE(c.done());
  std::thread t([&] { promise.set_value(5); });
  EXPECT_EQ(c.wait(), 5);
  t.join();
  EXPECT_TRUE(c.done());
  EXPECT_THROW(promise.set_value(6), RuntimeError);
  EXPECT_EQ(c.wait(), 5);
  EXPECT_THROW(ext::ProviderCompletion<int>::deferred(nullptr), TypeError);
}

TEST(CarrierExtension_R4_PreparedWork, RecordsValidateTheirFields) {
  EXPECT_THROW(ext::ProviderResult({}), ValueError);
  EXPECT_THROW(ext::PreparedKernel(nullptr, [] { return ext::ResultSubmission(ext::ProviderResult({})); }), TypeError);
  EXPECT_THROW(ext::PreparedKernel(jit(), nullptr), TypeError);
  EXPECT_THROW(ext::PreparedTransfer(nullptr), TypeError);
  EXPECT_THROW(ext::PreparedComposite(nullptr), TypeError);
  const Tensor t = make_tensor<CPU>({1.0f}, Shape{1});
  EXPECT_EQ(ext::ProviderResult({t}).outputs().size(), 1u);
}

// ---------------------------------------------------------------- R5

TEST(CarrierExtension_R5_TransferRoute, FieldsAreValidated) {
  ext::TransferProvider provider([](const ext::TransferRequest&) -> ext::TransferProvider::Prepared {
    return ext::Unsupported("no");
  });
  EXPECT_THROW(ext::TransferProvider(nullptr), TypeError);
  EXPECT_THROW(ext::TransferRoute(carrier_class<int>(), carrier_class<CPU>(), "r", provider), TypeError);
  EXPECT_THROW(ext::TransferRoute(carrier_class<CPU>(), carrier_class<Carrier>(), "r", provider), TypeError);
  EXPECT_THROW(ext::TransferRoute(carrier_class<ext::DefinedCarrier>(), carrier_class<CPU>(), "r", provider), TypeError);
  EXPECT_THROW(ext::TransferRoute(carrier_class<CPU>(), carrier_class<Generic>(), "", provider), ValueError);
  const ext::TransferRoute r(carrier_class<CPU>(), carrier_class<Generic>(), "cpu-to-generic", provider);
  EXPECT_EQ(r.source_class(), carrier_class<CPU>());
  EXPECT_EQ(r.route_id(), "cpu-to-generic");
}

// ---------------------------------------------------------------- R6

TEST(CarrierExtension_R6_Providers, KernelAndCompositeProvidersValidateTheirFields) {
  EXPECT_THROW(ext::KernelProvider(nullptr), TypeError);
  EXPECT_THROW(ext::KernelProvider(jit(), {pattern("k", {scale_plan(DType::Float32())}),
                                           pattern("k", {scale_plan(DType::Int32())})}),
               ValueError);
  auto ok = composite_provider<600>();
  EXPECT_THROW(ext::CompositeProvider(nullptr, ok.result_carriers(), ok.prepare()), TypeError);
  EXPECT_THROW(ext::CompositeProvider(ok.capabilities(), nullptr, ok.prepare()), TypeError);
  EXPECT_THROW(ext::CompositeProvider(ok.capabilities(), ok.result_carriers(), nullptr), TypeError);
}

TEST(CarrierExtension_R6_ExecutionOwnership, IndependentAndDependentDefinitionsHaveTheirOwnShapes) {
  // An independent class cannot have a composite; a dependent one needs a
  // composite and cannot own kernels.
  EXPECT_THROW(ext::register_carrier_definition(
                   carrier_class<Arena<601>>(),
                   ext::CarrierDefinition(arena_storage<601>(), std::nullopt, {}, composite_provider<601>())),
               TypeError);
  EXPECT_THROW(ext::register_carrier_definition(carrier_class<Composite<601>>(),
                                                ext::CarrierDefinition(composite_storage<601>())),
               TypeError);
  EXPECT_THROW(ext::register_carrier_definition(
                   carrier_class<Composite<601>>(),
                   ext::CarrierDefinition(composite_storage<601>(), ext::KernelProvider(jit()), {},
                                          composite_provider<601>())),
               TypeError);
  EXPECT_EQ(ext::carrier_definition(carrier_class<Composite<601>>()), nullptr);
  EXPECT_EQ(ext::carrier_definition(carrier_class<Arena<601>>()), nullptr);
}

TEST(CarrierExtension_R6_ExecutionOwnership, DependentInstancesFreezeTheirOwnSortedReach) {
  using C = Composite<602>;
  ext::register_carrier_definition(carrier_class<C>(),
                                   ext::CarrierDefinition(composite_storage<602>(), std::nullopt, {},
                                                          composite_provider<602>()));
  const auto wide = ext::create<C>(2, DType::Float32(), true,
                                   std::vector{scale_plan(DType::Int32()), scale_plan(DType::Float32())});
  const auto narrow = ext::create<C>(2, DType::Float32(), true, std::vector{scale_plan(DType::Float32())});
  const auto wide_caps = wide->operation_capabilities();
  ASSERT_EQ(wide_caps.size(), 2u);
  EXPECT_TRUE(wide_caps[0] < wide_caps[1]);  // the standard order
  EXPECT_EQ(narrow->operation_capabilities().size(), 1u);
  EXPECT_FALSE(narrow->supports_operation_plan(scale_plan(DType::Int32()).to_plan()));
  // A duplicate shape exposes nothing.
  EXPECT_THROW(ext::create<C>(2, DType::Float32(), true,
                              std::vector{scale_plan(DType::Float32()), scale_plan(DType::Float32())}),
               ValueError);
}

// ---------------------------------------------------------------- R7

template <int N>
void register_computing_arena(std::vector<ext::KernelPattern> patterns, const char* version = "1") {
  ext::register_carrier_definition(
      carrier_class<Arena<N>>(),
      ext::CarrierDefinition(arena_storage<N>(), ext::KernelProvider(jit(version), std::move(patterns))));
}

TEST(CarrierExtension_R7_Sealing, SecondDefinitionIsTypeErrorAndTheFirstIsKept) {
  register_computing_arena<700>({pattern("a", {scale_plan(DType::Float32())})});
  const auto first = ext::carrier_definition(carrier_class<Arena<700>>());
  EXPECT_THROW(ext::register_carrier_definition(carrier_class<Arena<700>>(), ext::CarrierDefinition(arena_storage<700>())),
               TypeError);
  EXPECT_EQ(ext::carrier_definition(carrier_class<Arena<700>>()), first);
}

TEST(CarrierExtension_R7_Sealing, PacksAreAcceptedUntilTheFirstCapabilityQuery) {
  using A = Arena<701>;
  register_computing_arena<701>({pattern("builtin_f32", {scale_plan(DType::Float32())})});
  ext::register_kernel_pack(ext::KernelPack("acme", "1", carrier_class<A>(), jit(),
                                            {pattern("pack_i32", {scale_plan(DType::Int32())})}));
  const auto caps = capabilities_for_carrier_class(carrier_class<A>());
  EXPECT_EQ(caps.size(), 2u);
  EXPECT_THROW(ext::register_kernel_pack(ext::KernelPack("late", "1", carrier_class<A>(), jit(),
                                                         {pattern("late_k", {scale_plan(DType::Bool())})})),
               TypeError);
  EXPECT_EQ(capabilities_for_carrier_class(carrier_class<A>()), caps);  // answers unchanged
}

TEST(CarrierExtension_R7_Sealing, TheFirstInstanceSealsToo) {
  using A = Arena<702>;
  register_computing_arena<702>({pattern("k", {scale_plan(DType::Float32())})});
  (void)ext::create<A>(1, DType::Float32());
  EXPECT_THROW(ext::register_kernel_pack(ext::KernelPack("acme", "1", carrier_class<A>(), jit(),
                                                         {pattern("p", {scale_plan(DType::Int32())})})),
               TypeError);
}

TEST(CarrierExtension_R7_Sealing, RacingPackAndObservationSeeAllOrNothing) {
  for (int round = 0; round < 1; ++round) {
    using A = Arena<703>;
    register_computing_arena<703>({pattern("k", {scale_plan(DType::Float32())})});
    std::barrier start(2);
    std::vector<OperationCapability> seen;
    bool accepted = false;
    std::thread observer([&] {
      start.arrive_and_wait();
      seen = capabilities_for_carrier_class(carrier_class<A>());
    });
    std::thread registrar([&] {
      start.arrive_and_wait();
      try {
        ext::register_kernel_pack(ext::KernelPack("acme", "1", carrier_class<A>(), jit(),
                                                  {pattern("p1", {scale_plan(DType::Int32())}),
                                                   pattern("p2", {scale_plan(DType::Bool())})}));
        accepted = true;
      } catch (const TypeError&) {
      }
    });
    observer.join();
    registrar.join();
    // Either the whole pack landed before sealing or none of it.
    EXPECT_EQ(seen.size(), accepted ? 3u : 1u);
    EXPECT_EQ(capabilities_for_carrier_class(carrier_class<A>()), seen);
  }
}

// ---------------------------------------------------------------- R9

TEST(CarrierExtension_R9_KernelExecutionInterface, VersionAndCompatibilityIdentity) {
  EXPECT_THROW(JitInterface(""), ValueError);
  const JitInterface a("2"), b("2"), c("3");
  const OtherInterface d("2");
  EXPECT_EQ(a.compatibility_identity(), b.compatibility_identity());
  EXPECT_FALSE(a.compatibility_identity() == c.compatibility_identity());
  EXPECT_FALSE(a.compatibility_identity() == d.compatibility_identity());
}

// A binding's host overrides interface_type(); describe() (the text of a
// pack's interface-mismatch TypeError) names that key, not the host type.
TEST(CarrierExtension_R9_KernelExecutionInterface, DescribeNamesTheIdentitysType) {
  struct KeyedHost final : ext::KernelExecutionInterface {
    using KernelExecutionInterface::KernelExecutionInterface;
    std::type_index interface_type() const override { return typeid(OtherInterface); }
  };
  const KeyedHost keyed("4");
  EXPECT_EQ(keyed.compatibility_identity(), OtherInterface("4").compatibility_identity());
  EXPECT_EQ(keyed.describe(), OtherInterface("4").describe());
  EXPECT_NE(keyed.describe().find("@4"), std::string::npos);
}

// ---------------------------------------------------------------- R10

TEST(CarrierExtension_R10_KernelPack, ConstructionValidatesItsFields) {
  auto p = [] { return std::vector{pattern("k", {scale_plan(DType::Float32())})}; };
  EXPECT_THROW(ext::KernelPack("", "1", carrier_class<Arena<1000>>(), jit(), p()), ValueError);
  EXPECT_THROW(ext::KernelPack("ns", "", carrier_class<Arena<1000>>(), jit(), p()), ValueError);
  EXPECT_THROW(ext::KernelPack("ns", "1", carrier_class<Arena<1000>>(), jit(), {}), ValueError);
  EXPECT_THROW(ext::KernelPack("ns", "1", carrier_class<Arena<1000>>(), nullptr, p()), TypeError);
  EXPECT_THROW(ext::KernelPack("ns", "1", carrier_class<Carrier>(), jit(), p()), TypeError);
  EXPECT_THROW(ext::KernelPack("ns", "1", carrier_class<int>(), jit(), p()), TypeError);
  EXPECT_THROW(ext::KernelPack("ns", "1", carrier_class<Composite<1000>>(), jit(), p()), TypeError);
  EXPECT_THROW(ext::KernelPack("ns", "1", carrier_class<Arena<1000>>(), jit(),
                               {pattern("k", {scale_plan(DType::Float32())}), pattern("k", {scale_plan(DType::Int32())})}),
               ValueError);
}

TEST(CarrierExtension_R10_KernelPack, RegistrationRejectsEveryIneligibleTargetAndContributesNothing) {
  auto pack = [](CarrierClass cls, std::shared_ptr<const ext::KernelExecutionInterface> i, const char* ns = "ns",
                 const char* id = "pk") {
    return ext::KernelPack(ns, "1", cls, std::move(i), {pattern(id, {scale_plan(DType::Int32())})});
  };
  // Shipped definition-free classes (R13.2) and a class without a definition.
  EXPECT_THROW(ext::register_kernel_pack(pack(carrier_class<CPU>(), jit())), TypeError);
  EXPECT_THROW(ext::register_kernel_pack(pack(carrier_class<Generic>(), jit())), TypeError);
  EXPECT_THROW(ext::register_kernel_pack(pack(carrier_class<FileBacked>(), jit())), TypeError);
  EXPECT_THROW(ext::register_kernel_pack(pack(carrier_class<Arena<1001>>(), jit())), TypeError);
  // A storage-only definition.
  ext::register_carrier_definition(carrier_class<Arena<1002>>(), ext::CarrierDefinition(arena_storage<1002>()));
  EXPECT_THROW(ext::register_kernel_pack(pack(carrier_class<Arena<1002>>(), jit())), TypeError);
  // Interface identity: another type, or another version.
  using A = Arena<1003>;
  register_computing_arena<1003>({pattern("base", {scale_plan(DType::Float32())})}, "7");
  EXPECT_THROW(ext::register_kernel_pack(pack(carrier_class<A>(), std::make_shared<OtherInterface>("7"))), TypeError);
  EXPECT_THROW(ext::register_kernel_pack(pack(carrier_class<A>(), jit("8"))), TypeError);
  // A kernel id already in the target's set, a duplicate (namespace, version).
  EXPECT_THROW(ext::register_kernel_pack(pack(carrier_class<A>(), jit("7"), "ns", "base")), ValueError);
  ext::register_kernel_pack(pack(carrier_class<A>(), jit("7"), "ns", "first"));
  EXPECT_THROW(ext::register_kernel_pack(pack(carrier_class<A>(), jit("7"), "ns", "second")), ValueError);
  // Only the accepted pack contributed.
  EXPECT_EQ(capabilities_for_carrier_class(carrier_class<A>()).size(), 2u);
}

TEST(CarrierExtension_R10_KernelPack, ASecondPackReusingAnEarlierPacksKernelIdIsAValueErrorAndContributesNothing) {
  // R10.2: a kernel_id already in the target's set, where the set includes
  // the packs registered before (not only the definition's own patterns).
  using A = Arena<1005>;
  register_computing_arena<1005>({pattern("base", {scale_plan(DType::Float32())})});
  ext::register_kernel_pack(ext::KernelPack("first", "1", carrier_class<A>(), jit(),
                                            {pattern("shared_id", {scale_plan(DType::Int32())})}));
  // Another namespace, another plan: only the kernel id collides.
  try {
    ext::register_kernel_pack(ext::KernelPack("second", "1", carrier_class<A>(), jit(),
                                              {pattern("shared_id", {scale_plan(DType::Bool())})}));
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("shared_id"), std::string::npos) << e.what();
  }
  EXPECT_EQ(capabilities_for_carrier_class(carrier_class<A>()).size(), 2u);  // base and the first pack only
}

TEST(CarrierExtension_R10_KernelPack, AttachmentIsByExactClassOnly) {
  struct Base : ext::DefinedCarrier {
    explicit Base(ext::Construction key) : DefinedCarrier(std::move(key)) {}
  };
  struct Sibling final : ext::DefinedCarrier {
    explicit Sibling(ext::Construction key) : DefinedCarrier(std::move(key)) {}
  };
  auto storage = arena_storage<1004>();  // the callbacks never run: no instance is made
  ext::register_carrier_definition(carrier_class<Base>(),
                                   ext::CarrierDefinition(storage, ext::KernelProvider(jit(), {})));
  ext::register_carrier_definition(carrier_class<Sibling>(),
                                   ext::CarrierDefinition(storage, ext::KernelProvider(jit(), {})));
  ext::register_kernel_pack(ext::KernelPack("acme", "1", carrier_class<Base>(), jit(),
                                            {pattern("p", {scale_plan(DType::Float32())})}));
  EXPECT_EQ(capabilities_for_carrier_class(carrier_class<Base>()).size(), 1u);
  EXPECT_TRUE(capabilities_for_carrier_class(carrier_class<Sibling>()).empty());
}

// ---------------------------------------------------------------- R11

TEST(CarrierExtension_R11_KernelPattern, FieldsAreValidated) {
  EXPECT_THROW(ext::Unsupported(""), ValueError);
  EXPECT_EQ(ext::Unsupported("too large").reason(), "too large");
  const auto prep = [](const op::ResolvedInvocation&, const ext::KernelExecutionInterface&)
      -> ext::KernelPattern::Prepared { return ext::Unsupported("x"); };
  const auto f32 = scale_plan(DType::Float32());
  EXPECT_THROW(ext::KernelPattern(nullptr, {f32}, "k", prep), TypeError);
  EXPECT_THROW(ext::KernelPattern(scale_op(), {f32}, "k", nullptr), TypeError);
  EXPECT_THROW(ext::KernelPattern(scale_op(), {}, "k", prep), ValueError);
  EXPECT_THROW(ext::KernelPattern(scale_op(), {f32}, "", prep), ValueError);
  EXPECT_THROW(ext::KernelPattern(scale_op(), {f32, f32}, "k", prep), ValueError);
  // A plan of another operation.
  const auto add_plan = OperationCapability::from_plan(
      resolve_operation_plan("add", {PlanOperand(DType::Float32()), PlanOperand(DType::Float32())}));
  EXPECT_THROW(ext::KernelPattern(scale_op(), {add_plan}, "k", prep), ValueError);
  // The built-in definition is a registered identity: a pattern may name it.
  EXPECT_NO_THROW(ext::KernelPattern(op::get_definition("add"), {add_plan}, "add_k", prep));
}

TEST(CarrierExtension_R11_CapabilityEnumeration, DeduplicatedUnionInTheStandardOrder) {
  using A = Arena<1100>;
  const auto add_plan = OperationCapability::from_plan(
      resolve_operation_plan("add", {PlanOperand(DType::Float32()), PlanOperand(DType::Float32())}));
  const auto prep = [](const op::ResolvedInvocation&, const ext::KernelExecutionInterface&)
      -> ext::KernelPattern::Prepared { return ext::Unsupported("x"); };
  register_computing_arena<1100>({pattern("scale_fast", {scale_plan(DType::Float32())}, 10),
                                  ext::KernelPattern(op::get_definition("add"), {add_plan}, "add_k", prep)});
  // The pack repeats one plan (deduplicated) and adds another.
  ext::register_kernel_pack(ext::KernelPack(
      "acme", "1", carrier_class<A>(), jit(),
      {pattern("scale_generic", {scale_plan(DType::Float32()), scale_plan(DType::Int32())})}));
  const auto caps = capabilities_for_carrier_class(carrier_class<A>());
  ASSERT_EQ(caps.size(), 3u);
  EXPECT_TRUE(std::is_sorted(caps.begin(), caps.end()));
  EXPECT_EQ(caps[0].operation(), "add");
  // The capability gate admits exactly these plans.
  const auto a = ext::create<A>(1, DType::Float32());
  EXPECT_TRUE(a->supports_operation_plan(scale_plan(DType::Int32()).to_plan()));
  EXPECT_EQ(*a->unsupported_plan_reason(scale_plan(DType::Bool()).to_plan()),
            fmt::format("{} has capabilities for operation 'exttest.scale' but none matches the plan {}.",
                        carrier_class<A>().name(), scale_plan(DType::Bool()).to_plan().to_string()));
}

// ---------------------------------------------------------------- R12

TEST(CarrierExtension_R12_Facets, FacetByExactTypeAndRequireFacet) {
  using A = Arena<1200>;
  auto facet_a = std::make_shared<FacetA>();
  ext::register_carrier_definition(carrier_class<A>(),
                                   ext::CarrierDefinition(arena_storage<1200>(), std::nullopt, {}, std::nullopt, {facet_a}));
  const auto a = ext::create<A>(1, DType::Float32());
  EXPECT_EQ(ext::facet<FacetA>(*a).get(), facet_a.get());
  EXPECT_EQ(ext::facet<FacetA>(*a)->value, 7);
  EXPECT_EQ(ext::facet<FacetB>(*a), nullptr);
  EXPECT_THROW(ext::require_facet<FacetB>(*a), NotImplementedError);
  EXPECT_EQ(ext::require_facet<FacetA>(*a).get(), facet_a.get());
  // A definition-free carrier has no facets.
  const Tensor t = make_tensor<CPU>({1.0f}, Shape{1});
  EXPECT_EQ(ext::facet<FacetA>(*t.carrier()), nullptr);
  EXPECT_THROW(ext::require_facet<FacetA>(*t.carrier()), NotImplementedError);
  // Facets never widen capabilities (R12.3): a storage-only class stays empty.
  EXPECT_TRUE(a->operation_capabilities().empty());
}

// ---------------------------------------------------------------- R13

TEST(CarrierExtension_R13_DefinitionFreePath, DefinitionBackedClassRejectsManualCapabilities) {
  using A = Arena<1300>;
  register_computing_arena<1300>({pattern("k", {scale_plan(DType::Float32())})});
  const OperationCapability cap = scale_plan(DType::Int32());
  EXPECT_THROW(register_operation_capabilities(carrier_class<A>(), std::span(&cap, 1)), TypeError);
  EXPECT_EQ(capabilities_for_carrier_class(carrier_class<A>()).size(), 1u);
}

TEST(CarrierExtension_R13_DefinitionFreePath, StorageOnlyDefinitionHasNoCapabilities) {
  using A = Arena<1301>;
  ext::register_carrier_definition(carrier_class<A>(), ext::CarrierDefinition(arena_storage<1301>()));
  EXPECT_TRUE(capabilities_for_carrier_class(carrier_class<A>()).empty());
  const auto a = ext::create<A>(2, DType::Float32());
  const Tensor t(a, 0, Layout::compact(Shape{2}));
  // Computational dispatch on a storage-only class: NotImplementedError
  // (UnsupportedOperationPlan) before any work.
  EXPECT_THROW((*scale_op())({t}), NotImplementedError);
  EXPECT_THROW(add(t, t), NotImplementedError);
  EXPECT_EQ(a->version(), 0u);
}

}  // namespace

