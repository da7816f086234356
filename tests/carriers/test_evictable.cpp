// Evictable (carrier-composition.md Part A, A1-A14; backend-capabilities,
// "Evictable snapshots executable and storable primary plans";
// docs/evictable.md). Suite names give the requirement
// (CarrierComposition_A<n>_<requirement>), test names its scenario.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <thread>
#include <unistd.h>
#include <memory>
#include <vector>

#include "support/logical_values.h"
#include "support/test_owner.h"

namespace {

using namespace strideweave;
using strideweave::testing::floats;

std::vector<Value> values_of(const std::vector<float>& v) {
  std::vector<Value> out;
  for (float x : v) out.push_back(Value::from_float32(x));
  return out;
}
std::shared_ptr<Carrier> cpu(const std::vector<float>& v, bool mutable_ = true) {
  return CPU::from_values(values_of(v), DType::Float32(), mutable_);
}
std::shared_ptr<Carrier> generic(const std::vector<float>& v) {
  return Generic::create(values_of(v), DType::Float32());
}
std::shared_ptr<Carrier> file_backed() { return FileBacked::create(std::nullopt, DType::Float32()); }

std::shared_ptr<Evictable> hierarchy(const std::vector<float>& v) { return Evictable::create(cpu(v), file_backed()); }
Tensor tensor_on(const std::shared_ptr<Carrier>& c) { return Tensor(c, Shape::of({c->size()})); }

// A Float32 carrier whose slot writes fail while `failing` is set (the
// move's destination in the failure-atomicity tests).
class Flaky final : public Carrier {
 public:
  explicit Flaky(std::int64_t n) : Carrier(DType::Float32(), true), values_(static_cast<std::size_t>(n)) {}
  explicit Flaky(std::vector<float> values) : Carrier(DType::Float32(), true), values_(std::move(values)) {}
  bool supports_storage_dtype(const DType& d) const noexcept override { return &d == &DType::Float32(); }
  static inline bool failing = false;

 protected:
  std::int64_t storage_size() const noexcept override { return static_cast<std::int64_t>(values_.size()); }
  Value read_slot(std::int64_t i) const override { return Value::from_float32(values_[static_cast<std::size_t>(i)]); }
  void write_slot(std::int64_t i, const Value& v) override {
    if (failing) throw OSError("Flaky: the write failed", EIO, "", std::nullopt);
    values_[static_cast<std::size_t>(i)] = v.f;
  }
  void release_storage() override { values_.clear(); }
  std::shared_ptr<Carrier> make_like(std::int64_t n, bool, const SimpleDType&, bool) const override {
    return std::make_shared<Flaky>(n);
  }

 private:
  std::vector<float> values_;
};

// A dependent carrier that never froze its capabilities: any capability
// query raises (the snapshot failure of A2).
class Unfinalized final : public DependentCarrier {
 public:
  Unfinalized() : DependentCarrier(DType::Float32(), true) {}
  bool supports_storage_dtype(const DType& d) const noexcept override { return &d == &DType::Float32(); }

 protected:
  std::int64_t storage_size() const noexcept override { return 2; }
  Value read_slot(std::int64_t) const override { return Value::from_float32(0); }
  void write_slot(std::int64_t, const Value&) override {}
  void release_storage() override {}
  std::shared_ptr<Carrier> make_like(std::int64_t, bool, const SimpleDType&, bool) const override {
    return std::make_shared<Unfinalized>();
  }
};

// ---------------------------------------------------------------- A1

TEST(CarrierComposition_A1_ConstructionValidatesATwoTierHierarchy, ConstructAPromotedHierarchy) {
  const std::shared_ptr<Carrier> primary = cpu({1, 2, 3});
  const std::shared_ptr<Carrier> secondary = file_backed();
  const std::shared_ptr<Evictable> e = Evictable::create(primary, secondary);
  EXPECT_FALSE(e->is_evicted());
  EXPECT_EQ(e->size(), 3);
  EXPECT_EQ(&e->dtype(), &DType::Float32());
  EXPECT_TRUE(primary->is_owned_by(*e));
  EXPECT_TRUE(secondary->is_owned_by(*e));
  EXPECT_EQ(e->class_name(), "Evictable");
  EXPECT_EQ(floats(tensor_on(e)), (std::vector<float>{1, 2, 3}));
}

TEST(CarrierComposition_A1_ConstructionValidatesATwoTierHierarchy, ABlockDeviceTierIsRefusedBeforeEverythingElse) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(STRIDEWEAVE_BINARY_DIR) / "block_device_images";
  fs::create_directories(dir);
  const fs::path image = dir / ("evictable-" + std::to_string(::getpid()) + ".img");
  fs::remove(image);
  {
    const std::shared_ptr<BlockDevice> device = BlockDevice::open(image, 16 * BlockDevice::block_bytes);
    const std::shared_ptr<Carrier> block = device->allocate(2);
    EXPECT_THROW(Evictable::create(block, cpu({0, 0})), TypeError);
    EXPECT_THROW(Evictable::create(cpu({1, 2}), block), TypeError);
    // Before the same-object check, and before a released tier's check.
    EXPECT_THROW(Evictable::create(block, block), TypeError);
    const std::shared_ptr<Carrier> released = cpu({1});
    released->release();
    EXPECT_THROW(Evictable::create(released, block), TypeError);
    EXPECT_FALSE(block->is_owned());
  }
  fs::remove(image);
}

TEST(CarrierComposition_A1_ConstructionValidatesATwoTierHierarchy, RejectEachBadTierInTheStatedOrder) {
  EXPECT_THROW(Evictable::create(nullptr, file_backed()), TypeError);
  EXPECT_THROW(Evictable::create(cpu({1}), nullptr), TypeError);
  const std::shared_ptr<Carrier> same = cpu({1});
  EXPECT_THROW(Evictable::create(same, same), ValueError);
  const std::shared_ptr<Carrier> released = cpu({1});
  released->release();
  EXPECT_THROW(Evictable::create(released, cpu({0})), RuntimeError);
  EXPECT_THROW(Evictable::create(cpu({1}), released), RuntimeError);
  const std::shared_ptr<Carrier> owned = cpu({1});
  const auto owner = sw_support::TestOwner::claiming(owned);
  EXPECT_THROW(Evictable::create(owned, cpu({0})), RuntimeError);
  EXPECT_THROW(Evictable::create(cpu({1}), owned), RuntimeError);
  EXPECT_THROW(Evictable::create(cpu({1}), CPU::create(1, DType::Int32())), TypeError);
  EXPECT_THROW(Evictable::create(cpu({1}), cpu({0}, /*mutable_=*/false)), RuntimeError);
  EXPECT_THROW(Evictable::create(CPU::create(0), cpu({0})), ValueError);
  // The order: a released primary is reported before a dtype mismatch, a
  // dtype mismatch before an immutable secondary, that before an empty primary.
  EXPECT_THROW(Evictable::create(released, CPU::create(1, DType::Int32())), RuntimeError);
  EXPECT_THROW(Evictable::create(cpu({1}), CPU::create(1, DType::Int32(), false)), TypeError);
  EXPECT_THROW(Evictable::create(CPU::create(0), cpu({0}, false)), RuntimeError);
}

// ---------------------------------------------------------------- A2

TEST(CarrierComposition_A2_ConstructionFailureLeavesOwnershipUnchanged, FailWhileFreezingHierarchyCapabilities) {
  const auto primary = std::make_shared<Unfinalized>();
  const std::shared_ptr<Carrier> secondary = generic({0, 0});
  EXPECT_THROW(Evictable::create(primary, secondary), RuntimeError);
  EXPECT_FALSE(primary->is_owned());
  EXPECT_FALSE(secondary->is_owned());
  EXPECT_TRUE(secondary->is_mutable());
}

TEST(CarrierComposition_A2_ConstructionFailureLeavesOwnershipUnchanged, AFailedCheckClaimsNothing) {
  const std::shared_ptr<Carrier> primary = cpu({1});
  EXPECT_THROW(Evictable::create(primary, cpu({0}, false)), RuntimeError);
  EXPECT_FALSE(primary->is_owned());
  EXPECT_TRUE(primary->is_mutable());
}

// ---------------------------------------------------------------- A3

TEST(CarrierComposition_A3_TheHierarchyExposesCurrentTierIdentities, TiersAreTheObjectsAndReplacementsAfterTransitions) {
  const std::shared_ptr<Carrier> primary = cpu({1, 2});
  const std::shared_ptr<Carrier> secondary = file_backed();  // empty: eviction replaces it
  const auto e = Evictable::create(primary, secondary);
  EXPECT_EQ(e->primary(), primary);
  EXPECT_EQ(e->secondary(), secondary);
  e->evict();
  EXPECT_NE(e->secondary(), secondary);
  EXPECT_EQ(e->secondary()->exact_class(), secondary->exact_class());
  EXPECT_TRUE(secondary->is_released());
  EXPECT_FALSE(secondary->is_owned());
  e->promote();
  EXPECT_NE(e->primary(), primary);
  EXPECT_EQ(e->primary()->exact_class(), carrier_class<CPU>());
  EXPECT_TRUE(e->primary()->is_owned_by(*e));
}

TEST(CarrierComposition_A3_TheHierarchyExposesCurrentTierIdentities, StorageSupportIsTheIntersectionOfBothTiers) {
  const auto e = hierarchy({1});
  EXPECT_TRUE(CPU::create(1)->supports_storage_dtype(DType::Bool()));
  EXPECT_FALSE(file_backed()->supports_storage_dtype(DType::Bool()));
  EXPECT_FALSE(e->supports_storage_dtype(DType::Bool()));
  EXPECT_TRUE(e->supports_storage_dtype(DType::Int32()));
  EXPECT_TRUE(e->supports_storage_dtype(DType::Float32()));
}

// ---------------------------------------------------------------- A4

TEST(CarrierComposition_A4_ChildOwnershipMakesRetainedAliasesReadOnly, AliasesReadButCannotMutateMoveOrRelease) {
  const std::shared_ptr<Carrier> primary = cpu({1, 2});
  const auto e = Evictable::create(primary, generic({0, 0}));
  EXPECT_TRUE(primary->is_owned());
  EXPECT_FALSE(primary->is_mutable());
  EXPECT_EQ(primary->get_value(1).f, 2.0f);
  EXPECT_THROW(primary->set_value(0, Value::from_float32(9)), RuntimeError);
  EXPECT_THROW(primary->bump_version(), RuntimeError);
  EXPECT_THROW(primary->release(), RuntimeError);
  EXPECT_THROW(move(tensor_on(primary), CPU::create(2)), RuntimeError);
  // Writes through the hierarchy reach the primary; it stays read-only to others.
  e->set_value(0, Value::from_float32(5));
  EXPECT_EQ(primary->get_value(0).f, 5.0f);
  EXPECT_FALSE(primary->is_mutable());
}

TEST(CarrierComposition_A4_ChildOwnershipMakesRetainedAliasesReadOnly, OwnershipComposesThroughNestedHierarchies) {
  const std::shared_ptr<Evictable> inner = hierarchy({1, 2});
  const auto outer = Evictable::create(inner, generic({0, 0}));
  EXPECT_TRUE(inner->is_owned_by(*outer));
  EXPECT_FALSE(inner->is_mutable());
  EXPECT_THROW(inner->set_value(0, Value::from_float32(3)), RuntimeError);
  EXPECT_THROW(inner->evict(), RuntimeError);  // only its owner may change its residency
  outer->set_value(0, Value::from_float32(3));
  EXPECT_EQ(inner->get_value(0).f, 3.0f);
  outer->evict();
  EXPECT_TRUE(inner->is_released());  // the move released the outer's primary, the inner hierarchy
  outer->promote();
  EXPECT_EQ(floats(tensor_on(outer)), (std::vector<float>{3, 2}));
  EXPECT_EQ(outer->primary()->exact_class(), carrier_class<Evictable>());
}

// ---------------------------------------------------------------- A5

TEST(CarrierComposition_A5_CompositeMutabilityIsCapturedFromThePrimary, AnImmutablePrimaryMakesAnImmutableHierarchy) {
  const auto e = Evictable::create(cpu({1}, false), file_backed());
  EXPECT_FALSE(e->is_mutable());
  EXPECT_THROW(e->set_value(0, Value::from_float32(2)), RuntimeError);
  e->evict();  // residency is not mutation
  e->promote();
  EXPECT_FALSE(e->is_mutable());  // the fresh (mutable) primary does not make it writable
  EXPECT_TRUE(hierarchy({1})->is_mutable());
  const std::shared_ptr<Evictable> inner = hierarchy({1});
  const auto owner = sw_support::TestOwner::claiming(inner);
  EXPECT_FALSE(inner->is_mutable());
}

// ---------------------------------------------------------------- A6

TEST(CarrierComposition_A6_PromotedStateIsRequiredForAccessAndExecution, EvictedAccessNamesPromote) {
  const auto e = hierarchy({1, 2});
  const Tensor t = tensor_on(e);
  e->evict();
  try {
    (void)e->get_value(0);
    FAIL() << "an evicted read must raise";
  } catch (const RuntimeError& err) {
    EXPECT_NE(std::string(err.what()).find("promote()"), std::string::npos) << err.what();
  }
  EXPECT_THROW(e->set_value(0, Value::from_float32(1)), RuntimeError);
  EXPECT_THROW((void)add(t, t), RuntimeError);
  EXPECT_THROW((void)e->dispatch_op("add"), RuntimeError);
  // What still works while evicted.
  EXPECT_TRUE(e->is_evicted());
  EXPECT_EQ(&e->dtype(), &DType::Float32());
  EXPECT_TRUE(e->supports_storage_dtype(DType::Float32()));
  EXPECT_FALSE(e->operation_capabilities("add").empty());
  e->promote();
  EXPECT_EQ(floats(t), (std::vector<float>{1, 2}));
}

TEST(CarrierComposition_A6_PromotedStateIsRequiredForAccessAndExecution, DLPackExportIsABufferError) {
  const auto e = hierarchy({1});
  EXPECT_THROW((void)to_dlpack(tensor_on(e)), BufferError);
}

// ---------------------------------------------------------------- A7, A8

TEST(CarrierComposition_A7_EvictionMovesCompleteStorageIntoTheSecondary, EvictIntoALargeEnoughSecondary) {
  const std::shared_ptr<Carrier> primary = cpu({1, 2, 3});
  const std::shared_ptr<Carrier> secondary = generic({0, 0, 0, 0});
  const auto e = Evictable::create(primary, secondary);
  e->evict();
  EXPECT_TRUE(e->is_evicted());
  EXPECT_EQ(e->secondary(), secondary);  // reused
  EXPECT_TRUE(primary->is_released());   // the move released the source
  EXPECT_EQ(secondary->get_value(2).f, 3.0f);
  e->evict();  // a no-op
  EXPECT_TRUE(e->is_evicted());
}

TEST(CarrierComposition_A8_PromotionRestoresFreshPrimaryClassStorage, PromoteIntoFreshPrimaryStorage) {
  const auto e = hierarchy({4, 5});
  e->promote();  // a no-op while promoted
  e->evict();
  e->promote();
  EXPECT_FALSE(e->is_evicted());
  EXPECT_EQ(e->primary()->exact_class(), carrier_class<CPU>());
  EXPECT_FALSE(e->primary()->is_released());
  EXPECT_EQ(floats(tensor_on(e)), (std::vector<float>{4, 5}));
  EXPECT_TRUE(e->secondary()->is_released());  // the move back released it
}

// ---------------------------------------------------------------- A9, A10

TEST(CarrierComposition_A9_ResidencyTransitionsAreFailureAtomic, AFailedEvictionKeepsEverythingAndCanBeRetried) {
  const std::shared_ptr<Carrier> primary = cpu({1, 2});
  const auto secondary = std::make_shared<Flaky>(2);
  const auto e = Evictable::create(primary, secondary);
  const std::uint64_t version = e->version();
  Flaky::failing = true;
  EXPECT_THROW(e->evict(), OSError);
  Flaky::failing = false;
  EXPECT_FALSE(e->is_evicted());
  EXPECT_EQ(e->primary(), primary);
  EXPECT_EQ(e->secondary(), secondary);
  EXPECT_FALSE(primary->is_released());
  EXPECT_TRUE(primary->is_owned_by(*e));
  EXPECT_TRUE(secondary->is_owned_by(*e));
  EXPECT_EQ(e->version(), version);
  EXPECT_EQ(floats(tensor_on(e)), (std::vector<float>{1, 2}));
  e->evict();  // the retry succeeds
  EXPECT_TRUE(e->is_evicted());
}

TEST(CarrierComposition_A9_ResidencyTransitionsAreFailureAtomic, AFailedPromotionDisposesItsFreshStorage) {
  const auto primary = std::make_shared<Flaky>(std::vector<float>{7, 8});
  const auto e = Evictable::create(primary, generic({0, 0}));
  e->evict();
  const std::shared_ptr<Carrier> secondary = e->secondary();
  const std::uint64_t version = e->version();
  Flaky::failing = true;  // the fresh Flaky primary refuses the values
  EXPECT_THROW(e->promote(), OSError);
  Flaky::failing = false;
  EXPECT_TRUE(e->is_evicted());
  EXPECT_EQ(e->primary(), primary);  // the released one: the fresh one was given back
  EXPECT_EQ(e->secondary(), secondary);
  EXPECT_FALSE(secondary->is_released());
  EXPECT_EQ(secondary->get_value(1).f, 8.0f);
  EXPECT_EQ(e->version(), version);
  e->promote();  // the retry succeeds into fresh (zeroed) Flaky storage
  EXPECT_NE(e->primary(), primary);
  EXPECT_EQ(floats(tensor_on(e)), (std::vector<float>{7, 8}));
}

TEST(CarrierComposition_A10_TransitionsPreserveLogicalVersionIdentity, OnlyWritesStepTheVersion) {
  const auto e = hierarchy({1, 2});
  const std::uint64_t v0 = e->version();
  e->evict();
  e->promote();
  EXPECT_EQ(e->version(), v0);
  e->set_value(1, Value::from_float32(3));
  EXPECT_EQ(e->version(), v0 + 1);
  const Tensor t = tensor_on(e);
  e->scatter(make_tensor<CPU>({9.0f}, Shape{1}), t, Layout::compact(Shape{1}));
  EXPECT_EQ(e->version(), v0 + 2);
}

// ---------------------------------------------------------------- A11, A12

TEST(CarrierComposition_A11_FactoriesPreserveTheHierarchyPattern, NewLikeAndAllocateLike) {
  const auto e = hierarchy({1});
  const std::shared_ptr<Carrier> made = e->new_like(values_of({3, 4}), /*mutable_=*/false);
  const auto* h = dynamic_cast<const Evictable*>(made.get());
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->primary()->exact_class(), carrier_class<CPU>());
  EXPECT_EQ(h->secondary()->exact_class(), carrier_class<FileBacked>());
  EXPECT_EQ(h->secondary()->size(), 0);
  EXPECT_FALSE(made->is_mutable());
  EXPECT_EQ(floats(tensor_on(made)), (std::vector<float>{3, 4}));
  const std::shared_ptr<Carrier> zeros = e->allocate_like(3, true, &DType::Int32());
  EXPECT_EQ(&zeros->dtype(), &DType::Int32());
  EXPECT_EQ(zeros->size(), 3);
  EXPECT_THROW((void)e->allocate_like(1, true, &DType::Bool()), ValueError);  // FileBacked cannot store it
}

TEST(CarrierComposition_A12_ResultsRetainCompositionOwnership, OperationResultsAreNewHierarchies) {
  const auto e = hierarchy({1, -2});
  const Tensor t = tensor_on(e);
  const Tensor r = relu(add(t, t));
  const auto* h = dynamic_cast<const Evictable*>(r.carrier().get());
  ASSERT_NE(h, nullptr);
  EXPECT_NE(h, e.get());
  EXPECT_TRUE(h->primary()->is_owned_by(*h));
  EXPECT_FALSE(h->primary()->is_mutable());
  EXPECT_EQ(floats(r), (std::vector<float>{2, 0}));
  // A layout-only result keeps the original hierarchy.
  EXPECT_EQ(t.reshape(Shape{2, 1}).carrier().get(), e.get());
}

// ---------------------------------------------------------------- A13

TEST(CarrierComposition_A13_ReleaseEndsTheWholeHierarchyLifecycle, ReleaseBothTiers) {
  const std::shared_ptr<Carrier> primary = cpu({1});
  const std::shared_ptr<Carrier> secondary = generic({0});
  const auto e = Evictable::create(primary, secondary);
  e->release();
  e->release();  // idempotent
  EXPECT_TRUE(primary->is_released());
  EXPECT_TRUE(secondary->is_released());
  EXPECT_EQ(e->size(), 0);
  EXPECT_THROW(e->evict(), RuntimeError);
  EXPECT_THROW(e->promote(), RuntimeError);
  EXPECT_THROW((void)e->get_value(0), RuntimeError);
  EXPECT_THROW((void)e->dispatch_op("add"), RuntimeError);
  const std::shared_ptr<Evictable> owned = hierarchy({1});
  const auto owner = sw_support::TestOwner::claiming(owned);
  EXPECT_THROW(owned->release(), RuntimeError);
}

TEST(CarrierComposition_A13_ReleaseEndsTheWholeHierarchyLifecycle, DestroyWithoutRelease) {
  const std::shared_ptr<Carrier> primary = cpu({1, 2});
  const std::shared_ptr<Carrier> secondary = generic({0, 0});
  {
    const auto e = Evictable::create(primary, secondary);
    EXPECT_FALSE(primary->is_mutable());
  }
  EXPECT_FALSE(primary->is_owned());
  EXPECT_FALSE(secondary->is_owned());
  EXPECT_TRUE(primary->is_mutable());
  EXPECT_FALSE(primary->is_released());
  EXPECT_EQ(primary->get_value(1).f, 2.0f);
}

// ---------------------------------------------------------------- A14

TEST(CarrierComposition_A14_CapabilitySnapshotAndDispatch, TheSnapshotIsThePrimarysStorablePlans) {
  const auto e = hierarchy({1});
  const std::vector<OperationCapability> snapshot = e->operation_capabilities();
  std::vector<OperationCapability> expected;
  for (const OperationCapability& c : e->primary()->operation_capabilities())
    if (&c.output() != &DType::Bool()) expected.push_back(c);
  ASSERT_FALSE(snapshot.empty());
  EXPECT_EQ(snapshot.size(), expected.size());
  for (const OperationCapability& c : expected) EXPECT_TRUE(e->supports_operation_plan(c.to_plan()));
  // A Bool-valued plan the primary executes but the secondary could not store.
  const OperationPlan less = resolve_operation_plan("lt", {DType::Float32(), DType::Float32()});
  EXPECT_TRUE(e->primary()->supports_operation_plan(less));
  EXPECT_FALSE(e->supports_operation_plan(less));
  const Tensor t = tensor_on(e);
  EXPECT_THROW((void)lt(t, t), UnsupportedOperationPlan);
  e->evict();  // structural: unchanged by residency and release
  EXPECT_EQ(e->operation_capabilities().size(), snapshot.size());
  e->release();
  EXPECT_EQ(e->operation_capabilities().size(), snapshot.size());
}

TEST(CarrierComposition_A14_CapabilitySnapshotAndDispatch, DispatchReturnsAFreshSingleUseAdapter) {
  const auto e = hierarchy({1, -1});
  const std::shared_ptr<Operation> op = e->dispatch_op("relu");
  const auto* adapter = dynamic_cast<const EvictableOperation*>(op.get());
  ASSERT_NE(adapter, nullptr);
  EXPECT_EQ(adapter->primary_operation()->_dispatch_carrier_class(), std::optional(carrier_class<CPU>()));
  EXPECT_NE(e->dispatch_op("relu"), op);
  const Tensor t = tensor_on(e);
  EXPECT_EQ(floats(op->forward(std::vector<operation::CallOperand>{t})[0]), (std::vector<float>{1, 0}));
  EXPECT_THROW((void)op->forward(std::vector<operation::CallOperand>{t}), RuntimeError);
}

TEST(CarrierComposition_A14_CapabilitySnapshotAndDispatch, OperandsMustBePromotedWithMatchingTierClasses) {
  const auto a = hierarchy({1});
  const auto b = hierarchy({2});
  const auto other = Evictable::create(cpu({3}), generic({0}));  // another secondary class
  EXPECT_EQ(floats(add(tensor_on(a), tensor_on(b))), (std::vector<float>{3}));
  EXPECT_THROW((void)add(tensor_on(a), tensor_on(other)), TypeError);
  b->evict();
  EXPECT_THROW((void)add(tensor_on(a), tensor_on(b)), RuntimeError);
}

TEST(CarrierComposition_A14_CapabilitySnapshotAndDispatch, TheAdapterIsTheOneNodeAndGradientsAreHierarchies) {
  const auto a = hierarchy({1, 2});
  const auto b = hierarchy({3, 4});
  const Tensor x = tensor_on(a), y = tensor_on(b);
  const Tensor z = reduce_sum(mul(x, y));
  ASSERT_TRUE(z.autograd_ctx());
  const std::vector<std::optional<Tensor>> g = grad(z, std::vector<Tensor>{x, y});
  ASSERT_TRUE(g[0] && g[1]);
  EXPECT_EQ(g[0]->carrier()->exact_class(), carrier_class<Evictable>());
  EXPECT_EQ(floats(*g[0]), (std::vector<float>{3, 4}));
  EXPECT_EQ(floats(*g[1]), (std::vector<float>{1, 2}));
  const Tensor m = mul(x, y);
  EXPECT_NE(dynamic_cast<const EvictableOperation*>(m.autograd_ctx().get()), nullptr);
  // Backward needs the saved inputs promoted.
  a->evict();
  EXPECT_THROW((void)grad(reduce_sum(m), std::vector<Tensor>{y}), RuntimeError);
}

// carrier-dispatch, "Evictable backward restores outer gradients": the
// adapter's backward takes an Evictable cotangent or one on the exact
// primary class; another class is a TypeError.
TEST(CarrierComposition_A14_CapabilitySnapshotAndDispatch, BackwardTakesAnEvictableOrExactPrimaryCotangent) {
  const Tensor x = tensor_on(hierarchy({1, 2}));
  const Tensor y = tensor_on(hierarchy({3, 4}));
  const Tensor m = mul(x, y);
  const std::shared_ptr<Operation> node = m.autograd_ctx();
  const std::vector<std::optional<Tensor>> on_primary = node->backward(make_tensor<CPU>({1.0f, 10.0f}, Shape{2}));
  ASSERT_TRUE(on_primary[0]);
  EXPECT_EQ(on_primary[0]->carrier()->exact_class(), carrier_class<Evictable>());
  EXPECT_EQ(floats(*on_primary[0]), (std::vector<float>{3, 40}));
  EXPECT_EQ(floats(*node->backward(tensor_on(hierarchy({1, 1})))[1]), (std::vector<float>{1, 2}));
  EXPECT_THROW((void)node->backward(make_tensor<Generic>({1.0f, 1.0f}, Shape{2})), TypeError);
  EXPECT_THROW((void)node->backward(make_tensor<CPU>({1.0f}, Shape{1})), ValueError);
  // An Evictable cotangent of other tier classes, or evicted, is refused.
  const auto other = Evictable::create(cpu({1, 1}), generic({0, 0}));
  EXPECT_THROW((void)node->backward(tensor_on(other)), TypeError);
  const auto evicted = hierarchy({1, 1});
  evicted->evict();
  EXPECT_THROW((void)node->backward(tensor_on(evicted)), RuntimeError);
}

// execute_lowered's own checks (call.h), through a hierarchy's adapter.
TEST(CarrierComposition_A14_CapabilitySnapshotAndDispatch, LoweringChecksItsOperandsBeforeAnyWork) {
  const Tensor a = make_tensor<CPU>({1.0f, 2.0f}, Shape{2});
  const Tensor b = make_tensor<CPU>({3.0f, 4.0f}, Shape{2});
  const Tensor out = make_tensor<CPU>({0.0f, 0.0f}, Shape{2});
  const OperationPlan plan = resolve_operation_plan("add", {DType::Float32(), DType::Float32()});
  const Attributes none;
  const std::string name = "add";
  const KernelOperand operands[] = {a, b};
  const Tensor outputs[] = {out};
  const DispatchedCall call{name, plan, operands, none, outputs, nullptr};
  const KernelOperand lowered[] = {make_tensor<Generic>({5.0f, 6.0f}, Shape{2}), make_tensor<Generic>({1.0f, 1.0f}, Shape{2})};
  const Tensor r = execute_lowered(call, lowered);
  EXPECT_EQ(r.carrier()->exact_class(), carrier_class<Generic>());
  EXPECT_EQ(floats(r), (std::vector<float>{6, 7}));
  const KernelOperand one[] = {a};
  EXPECT_THROW((void)execute_lowered(call, one), ValueError);
  const KernelOperand mixed[] = {a, make_tensor<Generic>({1.0f, 1.0f}, Shape{2})};
  EXPECT_THROW((void)execute_lowered(call, mixed), TypeError);
  const KernelOperand reshaped[] = {make_tensor<CPU>({1.0f}, Shape{1}), b};
  EXPECT_THROW((void)execute_lowered(call, reshaped), ValueError);
  const KernelOperand scalar[] = {Value::from_float32(1), b};
  EXPECT_THROW((void)execute_lowered(call, scalar), TypeError);
}

}  // namespace

namespace {

// A definition-free class that implements one user-defined operation
// through its dispatch hook: the primary of the hierarchy below.
class Doubler final : public Carrier {
 public:
  explicit Doubler(std::vector<float> v) : Carrier(DType::Float32(), true), values_(std::move(v)) {}
  bool supports_storage_dtype(const DType& d) const noexcept override { return &d == &DType::Float32(); }

 protected:
  std::int64_t storage_size() const noexcept override { return static_cast<std::int64_t>(values_.size()); }
  Value read_slot(std::int64_t i) const override { return Value::from_float32(values_[static_cast<std::size_t>(i)]); }
  void write_slot(std::int64_t i, const Value& v) override { values_[static_cast<std::size_t>(i)] = v.f; }
  void release_storage() override { values_.clear(); }
  std::shared_ptr<Carrier> make_like(std::int64_t n, bool, const SimpleDType&, bool) const override {
    return std::make_shared<Doubler>(std::vector<float>(static_cast<std::size_t>(n)));
  }
  std::shared_ptr<Operation> _dispatch_op(std::string_view name) const override {
    if (name == "evictable_test.double") return std::make_shared<Kernel>();
    return Carrier::_dispatch_op(name);
  }

 private:
  struct Kernel final : Operation {
    void _forward(const DispatchedCall& call) override {
      const Tensor& x = call.tensor(0);
      for (std::int64_t k = 0; k < call.output().size(); ++k)
        call.output().carrier()->set_value(call.output().offset() + call.output().layout()(k),
                                           Value::from_float32(2 * x.at_ordinal(k).f));
    }
  };
  std::vector<float> values_;
};

std::shared_ptr<const operation::OperationDefinition> doubling() {
  static const auto d = [] {
    namespace op = strideweave::operation;
    const SimpleDType& f = DType::Float32();
    const auto definition = op::define_operation(
        "evictable_test.double", op::OperationSchema({op::OperandSpec("x", op::OperandKind::TENSOR, true)}),
        [](const op::BoundOperationCall& call) {
          const SimpleDType& f32 = DType::Float32();
          OperationPlan plan("evictable_test.double", {OperandPlan::tensor(f32)}, Arithmetic::BINARY32, std::nullopt,
                             nullptr, f32);
          return op::ResolvedInvocation(call, plan, {op::ResultSpec::compact(f32, call.tensor(0).shape())});
        },
        std::nullopt, op::NON_DIFFERENTIABLE);
    const OperationCapability cap = OperationCapability::from_plan(
        OperationPlan("evictable_test.double", {OperandPlan::tensor(f)}, Arithmetic::BINARY32, std::nullopt, nullptr, f));
    register_operation_capabilities(carrier_class<Doubler>(), std::span(&cap, 1));
    return definition;
  }();
  return d;
}

}  // namespace

// A14.2 for a user-defined operation: the adapter lowers it through its
// definition onto the primary's class (here one whose dispatch hook
// implements it) and publishes a new hierarchy.
TEST(CarrierComposition_A14_CapabilitySnapshotAndDispatch, AUserDefinedOperationLowersThroughItsDefinition) {
  const auto d = doubling();
  const auto e = Evictable::create(std::make_shared<Doubler>(std::vector<float>{1, 2, 3}), generic({0, 0, 0}));
  const Tensor x = tensor_on(e);
  const std::vector<Tensor> y = (*d)({x});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].carrier()->exact_class(), carrier_class<Evictable>());
  EXPECT_EQ(floats(y[0]), (std::vector<float>{2, 4, 6}));
  e->evict();
  EXPECT_THROW((void)(*d)({x}), RuntimeError);
  // A plan the primary does not execute is not in the snapshot.
  EXPECT_THROW((void)(*d)({tensor_on(hierarchy({1}))}), UnsupportedOperationPlan);
}

// docs/evictable.md, "Threads": a transition waits for the accesses and
// operations in progress; one started during a transition raises
// RuntimeError at once. Values are never torn (run under ThreadSanitizer).
TEST(CarrierComposition_Threads, TransitionsAndOperationsRaceSafely) {
  const auto e = hierarchy({1, 2, 3, 4});
  const Tensor t = tensor_on(e);
  std::atomic<bool> stop{false};
  std::atomic<int> computed{0}, refused{0};
  std::thread worker([&] {
    NoGradGuard no_graph;
    while (!stop.load()) {
      try {
        const Tensor r = add(t, t);
        EXPECT_EQ(floats(r), (std::vector<float>{2, 4, 6, 8}));
        ++computed;
      } catch (const RuntimeError&) {
        ++refused;  // evicted, or in transition
      }
    }
  });
  for (int k = 0; k < 200; ++k) {
    e->evict();
    e->promote();
  }
  stop.store(true);
  worker.join();
  EXPECT_EQ(floats(t), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_GT(computed.load() + refused.load(), 0);
}
