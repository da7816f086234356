// Composite ownership (issue 20, step 5; core-concepts.md 1.5-1.6;
// carrier-composition.md A2, A4, A13; include/strideweave/dependent_carrier.h):
// a DependentCarrier claims its children all or nothing, a claimed child
// refuses every public mutation (writes, scatter, version bumps, moves,
// release) with RuntimeError and stays readable, the owner's access scope
// lets only the owner mutate, ownership nests and cannot form a cycle, and
// relinquishing or destroying the owner gives the children their mutability
// back. Suite name = requirement, test name = rule.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

namespace {

using namespace strideweave;

std::vector<Value> floats(std::initializer_list<float> fs) {
  std::vector<Value> out;
  for (float f : fs) out.push_back(Value::from_float32(f));
  return out;
}

std::shared_ptr<CPU> cpu(std::initializer_list<float> fs) { return CPU::from_values(floats(fs), DType::Float32()); }

// A composite whose storage is its first child (its "primary"); it owns
// every child it is given. Its storage hooks reach the primary through its
// own owner access, so a write to the composite is a write to the primary.
class Composite final : public DependentCarrier {
 public:
  explicit Composite(std::vector<std::shared_ptr<Carrier>> children, bool mutable_ = true)
      : DependentCarrier(DType::Float32(), mutable_), children_(std::move(children)) {
    claim(children_);
    finalize_operation_capabilities();
  }
  static std::shared_ptr<Composite> of(std::vector<std::shared_ptr<Carrier>> children) {
    return std::make_shared<Composite>(std::move(children));
  }
  bool supports_storage_dtype(const DType& d) const noexcept override { return &d == &DType::Float32(); }
  Carrier& primary() const { return *children_.front(); }

  // The owner's own work on its children.
  void write_child(std::size_t k, std::int64_t index, float v) {
    const OwnerAccess access = owner_access();
    children_.at(k)->set_value(index, Value::from_float32(v));
  }
  Tensor move_child(std::size_t from, std::size_t to) {
    const OwnerAccess access = owner_access();
    return move(Tensor(children_.at(from), Shape{children_.at(from)->size()}), children_.at(to));
  }
  void release_child(std::size_t k) {
    const OwnerAccess access = owner_access();
    children_.at(k)->release();
  }
  void give_back(std::size_t k) { relinquish(*children_.at(k)); }
  void claim_more(std::vector<std::shared_ptr<Carrier>> more) { claim(more); }
  // Runs f inside this composite's owner access.
  template <class F>
  void as_owner(F&& f) {
    const OwnerAccess access = owner_access();
    f();
  }

 protected:
  std::int64_t storage_size() const noexcept override { return children_.front()->size(); }
  Value read_slot(std::int64_t i) const override { return primary().get_value(i); }
  void write_slot(std::int64_t i, const Value& v) override {
    const OwnerAccess access = owner_access();
    primary().set_value(i, v);
  }
  void release_storage() override {
    const OwnerAccess access = owner_access();
    for (auto& c : children_) c->release();
  }
  std::shared_ptr<Carrier> make_like(std::int64_t size, bool, const SimpleDType& dtype, bool) const override {
    return std::make_shared<Composite>(std::vector<std::shared_ptr<Carrier>>{CPU::create(size, dtype)});
  }
  std::vector<OperationCapability> _generate_operation_capabilities() const override { return {}; }

 private:
  std::vector<std::shared_ptr<Carrier>> children_;
};

// ---------------------------------------------------------------- A4

TEST(CarrierComposition_A4_OwnedChildIsReadOnlyToEveryoneElse, EveryPublicMutationIsRuntimeErrorAndNothingChanges) {
  auto child = cpu({1, 2, 3});
  auto other = cpu({7, 8, 9});
  auto owner = Composite::of({child});
  EXPECT_TRUE(child->is_owned());
  EXPECT_TRUE(child->is_owned_by(*owner));
  EXPECT_FALSE(other->is_owned_by(*owner));
  EXPECT_FALSE(child->is_mutable());
  const Tensor alias(child, Shape{3});
  EXPECT_THROW(child->set_value(0, Value::from_float32(5)), RuntimeError);
  const std::vector<Value> one = floats({5});
  EXPECT_THROW(child->write_values(0, one), RuntimeError);
  EXPECT_THROW(child->copy_range(*other, 0, 0, 1), RuntimeError);
  EXPECT_THROW(child->scatter(Tensor(other, 0, Layout::compact(Shape{1})), alias, Layout::compact(Shape{1})), RuntimeError);
  EXPECT_THROW(child->bump_version(), RuntimeError);
  EXPECT_THROW(child->release(), RuntimeError);
  EXPECT_THROW(move(alias, CPU::create(3)), RuntimeError);                   // moved out
  EXPECT_THROW(move(Tensor(other, Shape{3}), child), RuntimeError);          // moved into
  EXPECT_THROW(add(Tensor(other, Shape{3}), Tensor(other, Shape{3}), into(alias)), RuntimeError);  // an output
  // Reading stays allowed; nothing changed.
  EXPECT_EQ(alias.values(), floats({1, 2, 3}));
  EXPECT_EQ(child->version(), 0u);
  EXPECT_FALSE(child->is_released());
  EXPECT_FALSE(other->is_released());
}

TEST(CarrierComposition_A4_OwnedChildIsReadOnlyToEveryoneElse, OwnerAccessLetsTheOwnerAloneMutateAndNeverMakesItPublic) {
  auto child = cpu({1, 2, 3});
  auto owner = Composite::of({child});
  auto stranger = Composite::of({cpu({0})});
  owner->write_child(0, 1, 20);
  EXPECT_EQ(child->get_value(1), Value::from_float32(20));
  EXPECT_EQ(child->version(), 1u);
  owner->as_owner([&] {
    EXPECT_FALSE(child->is_mutable());  // owner access is not public mutability
    child->set_value(2, Value::from_float32(30));
  });
  // Another composite's access does not reach this child.
  stranger->as_owner([&] { EXPECT_THROW(child->set_value(0, Value::from_float32(9)), RuntimeError); });
  // A scope ends with its holder: refused again afterwards, on every thread.
  EXPECT_THROW(child->set_value(0, Value::from_float32(9)), RuntimeError);
  owner->as_owner([&] {
    std::thread([&] { EXPECT_THROW(child->set_value(0, Value::from_float32(9)), RuntimeError); }).join();
  });
  EXPECT_EQ(child->read_values(0, 3), floats({1, 20, 30}));
  // An intrinsically read-only child stays read-only to its owner too.
  auto frozen = CPU::from_values(floats({4}), DType::Float32(), /*mutable_=*/false);
  auto holder = Composite::of({frozen});
  EXPECT_THROW(holder->write_child(0, 0, 1), RuntimeError);
}

TEST(CarrierComposition_A4_OwnedChildIsReadOnlyToEveryoneElse, TheOwnerMovesAndReleasesItsOwnChildren) {
  auto first = cpu({1, 2, 3});
  auto second = CPU::create(3);
  auto owner = Composite::of({first, second});
  const Tensor moved = owner->move_child(0, 1);
  EXPECT_EQ(moved.values(), floats({1, 2, 3}));
  EXPECT_TRUE(first->is_released());
  EXPECT_EQ(second->version(), 1u);
  EXPECT_TRUE(second->is_owned_by(*owner));
  owner->release_child(1);
  EXPECT_TRUE(second->is_released());
}

TEST(CarrierComposition_A4_OwnedChildIsReadOnlyToEveryoneElse, OwnershipNestsAndCannotFormACycle) {
  auto leaf = cpu({1, 2});
  auto inner = Composite::of({leaf});
  auto outer = Composite::of({inner});
  EXPECT_TRUE(inner->is_owned_by(*outer));
  EXPECT_TRUE(leaf->is_owned_by(*inner));
  // Publicly, neither the owned composite nor its child can be written.
  EXPECT_THROW(inner->set_value(0, Value::from_float32(5)), RuntimeError);
  EXPECT_THROW(leaf->set_value(0, Value::from_float32(5)), RuntimeError);
  // The outer owner writes the inner composite, which writes its leaf with
  // its own access (the scopes nest).
  outer->write_child(0, 0, 5);
  EXPECT_EQ(leaf->get_value(0), Value::from_float32(5));
  EXPECT_EQ(inner->version(), 1u);
  // The outer owner's access does not reach its grandchild directly.
  outer->as_owner([&] { EXPECT_THROW(leaf->set_value(1, Value::from_float32(6)), RuntimeError); });
  // A cycle: the inner composite cannot claim its own owner, or itself.
  EXPECT_THROW(inner->claim_more({outer}), RuntimeError);
  EXPECT_THROW(inner->claim_more({inner}), ValueError);
  EXPECT_FALSE(outer->is_owned());
}

// ---------------------------------------------------------------- A2

TEST(CarrierComposition_A2_ClaimIsAllOrNothing, AFailingChildLeavesEveryOtherChildUnowned) {
  auto a = cpu({1});
  auto released = cpu({2});
  released->release();
  auto owner = Composite::of({cpu({0})});
  EXPECT_THROW(owner->claim_more({a, released}), RuntimeError);
  EXPECT_FALSE(a->is_owned());
  EXPECT_THROW(owner->claim_more({a, a}), ValueError);
  EXPECT_FALSE(a->is_owned());
  EXPECT_THROW(owner->claim_more({a, nullptr}), TypeError);
  EXPECT_FALSE(a->is_owned());
  auto taken = cpu({3});
  auto first_owner = Composite::of({taken});
  EXPECT_THROW(owner->claim_more({a, taken}), RuntimeError);
  EXPECT_FALSE(a->is_owned());
  EXPECT_TRUE(taken->is_owned_by(*first_owner));
  EXPECT_EQ(owner->owned_children().size(), 1u);
  // A constructor that fails to claim leaves nothing owned.
  EXPECT_THROW(Composite::of({a, taken}), RuntimeError);
  EXPECT_FALSE(a->is_owned());
}

// A composite whose capability generation fails after it claimed.
class FailingComposite final : public DependentCarrier {
 public:
  // Claims; finalises later (as a Python subclass's __init__ does, whose
  // half-built object outlives a failure).
  explicit FailingComposite(std::shared_ptr<Carrier> child) : DependentCarrier(DType::Float32(), true) {
    claim(child);
  }
  void finalize() { finalize_operation_capabilities(); }
  bool supports_storage_dtype(const DType&) const noexcept override { return true; }

 protected:
  std::int64_t storage_size() const noexcept override { return 0; }
  Value read_slot(std::int64_t) const override { return {}; }
  void write_slot(std::int64_t, const Value&) override {}
  void release_storage() override {}
  std::shared_ptr<Carrier> make_like(std::int64_t, bool, const SimpleDType&, bool) const override { return nullptr; }
  std::vector<OperationCapability> _generate_operation_capabilities() const override {
    throw ValueError("no capabilities today");
  }
};

TEST(CarrierComposition_A2_ClaimIsAllOrNothing, AFailedCapabilityFinalisationRelinquishesEveryClaim) {
  auto child = cpu({1});
  auto composite = std::make_shared<FailingComposite>(child);
  EXPECT_TRUE(child->is_owned());
  EXPECT_THROW(composite->finalize(), ValueError);  // the composite is still alive here
  EXPECT_FALSE(child->is_owned());
  EXPECT_TRUE(composite->owned_children().empty());
  EXPECT_TRUE(child->is_mutable());
}

// ---------------------------------------------------------------- relinquish, A13

TEST(CarrierComposition_A13_OwnershipEnds, RelinquishingGivesTheChildItsMutabilityBack) {
  auto child = cpu({1});
  auto owner = Composite::of({cpu({0}), child});
  owner->give_back(1);
  EXPECT_FALSE(child->is_owned());
  EXPECT_TRUE(child->is_mutable());
  child->set_value(0, Value::from_float32(2));
  EXPECT_EQ(owner->owned_children().size(), 1u);
  EXPECT_THROW(owner->give_back(1), RuntimeError);  // no longer its child
}

TEST(CarrierComposition_A13_OwnershipEnds, DestroyingTheOwnerWithoutReleaseRelinquishesItsChildren) {
  auto child = cpu({1, 2});
  {
    auto owner = Composite::of({child});
    EXPECT_TRUE(child->is_owned());
  }
  EXPECT_FALSE(child->is_owned());
  EXPECT_TRUE(child->is_mutable());
  EXPECT_EQ(child->read_values(0, 2), floats({1, 2}));
  child->release();
  EXPECT_TRUE(child->is_released());
}

TEST(CarrierComposition_A13_OwnershipEnds, ReleasingTheOwnerReleasesItsChildrenThroughOwnerAccess) {
  auto a = cpu({1});
  auto b = cpu({2});
  auto owner = Composite::of({a, b});
  owner->release();
  EXPECT_TRUE(a->is_released());
  EXPECT_TRUE(b->is_released());
  EXPECT_TRUE(owner->is_released());
}

}  // namespace
