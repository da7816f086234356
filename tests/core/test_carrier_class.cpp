// Carrier class identities (include/strideweave/carrier_class.h):
// core-concepts.md 1.8 ("a carrier class is its exact class"),
// backend-capabilities.md "Independent capabilities belong to one exact
// class", cpp-mapping.md "Values and identities". Issue 10 items 5 and 6:
// identities cannot be forged, run-time classes get identities of their own,
// and one class has one name in every message.
#include <strideweave/strideweave.h>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "support/expect_exactly.h"

namespace {

using namespace strideweave;

// A minimal definition-free carrier with one Float32 slot per value.
class SlotCarrier : public Carrier {
 public:
  explicit SlotCarrier(std::int64_t n) : Carrier(DType::Float32(), true), values_(static_cast<std::size_t>(n), 0.0f) {}
  bool supports_storage_dtype(const DType& d) const noexcept override { return &d == &DType::Float32(); }

 protected:
  // The run-time host constructor: Carrier's protected run-time form.
  SlotCarrier(std::int64_t n, CarrierClass runtime_class)
      : Carrier(DType::Float32(), true, runtime_class), values_(static_cast<std::size_t>(n), 0.0f) {}
  std::int64_t storage_size() const noexcept override { return static_cast<std::int64_t>(values_.size()); }
  Value read_slot(std::int64_t i) const override { return Value::from_float32(values_[static_cast<std::size_t>(i)]); }
  void write_slot(std::int64_t i, const Value& v) override { values_[static_cast<std::size_t>(i)] = v.f; }
  void release_storage() noexcept override { values_.clear(); }
  std::shared_ptr<Carrier> make_like(std::int64_t, bool, const SimpleDType&, bool) const override {
    throw RuntimeError("SlotCarrier: no allocation in these tests");
  }

 private:
  std::vector<float> values_;
};

// The C++ host of run-time classes (what a Python binding's trampoline is).
class RuntimeHost final : public SlotCarrier {
 public:
  RuntimeHost(std::int64_t n, CarrierClass runtime_class) : SlotCarrier(n, runtime_class) {}
};

// A different C++ class that tries to claim a run-time identity minted for
// RuntimeHost.
class Impostor final : public SlotCarrier {
 public:
  Impostor(std::int64_t n, CarrierClass runtime_class) : SlotCarrier(n, runtime_class) {}
};

class PlainA final : public SlotCarrier {
 public:
  using SlotCarrier::SlotCarrier;
};

// A definition-free dependent host for run-time dependent classes.
class DependentHost final : public DependentCarrier {
 public:
  explicit DependentHost(CarrierClass runtime_class) : DependentCarrier(DType::Float32(), true, runtime_class) {
    finalize_operation_capabilities();
  }
  bool supports_storage_dtype(const DType& d) const noexcept override { return &d == &DType::Float32(); }

 protected:
  std::vector<OperationCapability> _generate_operation_capabilities() const override { return {}; }
  std::int64_t storage_size() const noexcept override { return 0; }
  Value read_slot(std::int64_t) const override { return Value::from_float32(0.0f); }
  void write_slot(std::int64_t, const Value&) override {}
  void release_storage() noexcept override {}
  std::shared_ptr<Carrier> make_like(std::int64_t, bool, const SimpleDType&, bool) const override {
    throw RuntimeError("DependentHost: no storage");
  }
};

// A subclass checks, from inside its own scope, whether it can reach the
// base's dependent marker (the old protected `dependent_instance_` let any
// subclass send the capability gate into an unchecked DependentCarrier cast).
class MarkerProbe final : public SlotCarrier {
 public:
  using SlotCarrier::SlotCarrier;
  template <class D>
  static constexpr bool sees_dependent_marker = requires(D& d) { d.dependent_instance_; };
  static constexpr bool kSeesMarker = sees_dependent_marker<MarkerProbe>;
};

TEST(CarrierClassIdentity_NotForgeable, NoPublicConstructorFromATypeOrTraits) {
  // The traits used to be trusted constructor arguments: any type could be
  // declared a (dependent) carrier.
  static_assert(!std::is_constructible_v<CarrierClass, const std::type_info&, CarrierClass::Traits>);
  static_assert(!std::is_default_constructible_v<CarrierClass>);
  static_assert(std::is_copy_constructible_v<CarrierClass>);
  // What a type's identity says comes from the type.
  EXPECT_FALSE(carrier_class<int>().traits().derives_carrier);
  EXPECT_TRUE(carrier_class<Carrier>().traits().is_root);
  EXPECT_TRUE(carrier_class<DependentCarrier>().traits().is_dependent);
  EXPECT_FALSE(carrier_class<PlainA>().traits().is_dependent);
}

TEST(CarrierClassIdentity_NotForgeable, SubclassesCannotMarkThemselvesDependent) {
  EXPECT_FALSE(MarkerProbe::kSeesMarker);
  const auto c = std::make_shared<MarkerProbe>(1);
  EXPECT_FALSE(c->exact_class().traits().is_dependent);
}

TEST(CarrierClassIdentity_ExactClass, TypeAndInstanceGiveTheSameIdentity) {
  const auto a = std::make_shared<PlainA>(2);
  EXPECT_EQ(a->exact_class(), carrier_class<PlainA>());
  EXPECT_EQ(a->exact_class().hash(), carrier_class<PlainA>().hash());
  EXPECT_FALSE(a->exact_class() == carrier_class<SlotCarrier>());  // never a base class
  EXPECT_EQ(CPU::create(1)->exact_class(), carrier_class<CPU>());
  EXPECT_FALSE(carrier_class<CPU>() == carrier_class<Generic>());
}

TEST(CarrierClassIdentity_RuntimeClasses, EachDefinitionIsANewIdentity) {
  const CarrierClass host = carrier_class<RuntimeHost>();
  const CarrierClass foo = CarrierClass::define_runtime_class("Foo", host);
  const CarrierClass foo_again = CarrierClass::define_runtime_class("Foo", host);
  EXPECT_TRUE(foo.is_runtime_defined());
  EXPECT_FALSE(host.is_runtime_defined());
  EXPECT_FALSE(foo == foo_again);  // two classes that share a name and a host
  EXPECT_FALSE(foo == host);
  EXPECT_EQ(foo.name(), "Foo");
  EXPECT_EQ(foo.cpp_name(), host.cpp_name());
  EXPECT_TRUE(foo.traits().derives_carrier);
  EXPECT_FALSE(foo.traits().is_dependent);

  const auto x = std::make_shared<RuntimeHost>(1, foo);
  const auto y = std::make_shared<RuntimeHost>(1, foo_again);
  EXPECT_EQ(x->exact_class(), foo);
  EXPECT_EQ(y->exact_class(), foo_again);
  EXPECT_EQ(x->class_name(), "Foo");
}

TEST(CarrierClassIdentity_RuntimeClasses, RegistriesKeepRuntimeClassesApart) {
  const CarrierClass host = carrier_class<RuntimeHost>();
  const CarrierClass declared = CarrierClass::define_runtime_class("Declared", host);
  const CarrierClass other = CarrierClass::define_runtime_class("Other", host);
  const OperationPlan plan = resolve_operation_plan("add", {DType::Float32(), DType::Float32()});
  const std::vector<OperationCapability> caps{OperationCapability::from_plan(plan)};
  register_operation_capabilities(declared, caps);
  EXPECT_TRUE(supports_operation_plan(declared, plan));
  EXPECT_FALSE(supports_operation_plan(other, plan));
  EXPECT_FALSE(supports_operation_plan(host, plan));
  EXPECT_TRUE(std::make_shared<RuntimeHost>(1, declared)->supports_operation_plan(plan));
  EXPECT_FALSE(std::make_shared<RuntimeHost>(1, other)->supports_operation_plan(plan));
}

TEST(CarrierClassIdentity_RuntimeClasses, DefinitionErrors) {
  EXPECT_THROW_EXACTLY(CarrierClass::define_runtime_class("", carrier_class<RuntimeHost>()), ValueError);
  EXPECT_THROW_EXACTLY(CarrierClass::define_runtime_class("X", carrier_class<int>()), TypeError);
  EXPECT_THROW_EXACTLY(CarrierClass::define_runtime_class("X", carrier_class<Carrier>()), TypeError);
  const CarrierClass runtime = CarrierClass::define_runtime_class("R", carrier_class<RuntimeHost>());
  EXPECT_THROW_EXACTLY(CarrierClass::define_runtime_class("X", runtime), TypeError);
}

TEST(CarrierClassIdentity_RuntimeClasses, OnlyMintedIdentitiesBindAndOnlyToTheirHost) {
  // A static identity cannot be claimed through the run-time constructor:
  // that would let any class impersonate CPU.
  try {
    RuntimeHost forged(1, carrier_class<CPU>());
    ADD_FAILURE() << "a static identity was accepted as a run-time class";
  } catch (const TypeError& e) {
    EXPECT_ERROR_TYPE_IS(e, TypeError);
    EXPECT_NE(std::string(e.what()).find("not a run-time class identity"), std::string::npos) << e.what();
  }
  // An identity minted for RuntimeHost cannot be claimed by another C++ class.
  const CarrierClass foo = CarrierClass::define_runtime_class("Foo", carrier_class<RuntimeHost>());
  const auto impostor = std::make_shared<Impostor>(1, foo);
  EXPECT_THROW_EXACTLY(impostor->exact_class(), TypeError);
  // A dependent host needs the dependent constructor, and the reverse.
  const CarrierClass dep = CarrierClass::define_runtime_class("Dep", carrier_class<DependentHost>());
  EXPECT_TRUE(dep.traits().is_dependent);
  EXPECT_THROW_EXACTLY(RuntimeHost(1, dep), TypeError);
  EXPECT_THROW_EXACTLY(DependentHost{foo}, TypeError);
  const auto d = std::make_shared<DependentHost>(dep);
  EXPECT_EQ(d->exact_class(), dep);
  EXPECT_TRUE(d->operation_capabilities().empty());
}

TEST(CarrierClassIdentity_RuntimeClasses, ConcurrentDefinitionsAreDistinct) {
  constexpr int kThreads = 4, kPerThread = 50;
  std::vector<std::vector<CarrierClass>> minted(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i)
        minted[static_cast<std::size_t>(t)].push_back(
            CarrierClass::define_runtime_class(fmt::format("C{}", i), carrier_class<RuntimeHost>()));
    });
  for (auto& th : threads) th.join();
  std::vector<CarrierClass> all;
  for (const auto& v : minted) all.insert(all.end(), v.begin(), v.end());
  for (std::size_t i = 0; i < all.size(); ++i)
    for (std::size_t j = 0; j < i; ++j) ASSERT_FALSE(all[i] == all[j]);
}

TEST(CarrierClassIdentity_OneName, ClassAndInstanceSentencesNameTheClassAlike) {
  // The class-level sentence used the demangled C++ name and the instance
  // sentence the carrier's class_name(): one class, two names.
  const OperationPlan plan = resolve_operation_plan("relu", {DType::Float32()});
  const auto a = std::make_shared<PlainA>(1);
  EXPECT_EQ(unsupported_plan_reason(carrier_class<PlainA>(), plan), a->unsupported_plan_reason(plan));
  EXPECT_EQ(a->class_name(), carrier_class<PlainA>().name());
  const OperationPlan i32 = resolve_operation_plan("relu", {DType::Int32()});
  const auto cpu = CPU::create(1);
  EXPECT_EQ(carrier_class<CPU>().name(), "CPU");
  EXPECT_EQ(cpu->class_name(), "CPU");
  EXPECT_EQ(carrier_class<Generic>().name(), "Generic");
  // A run-time class's name in both sentences.
  const CarrierClass named = CarrierClass::define_runtime_class("Accelerator", carrier_class<RuntimeHost>());
  const auto r = std::make_shared<RuntimeHost>(1, named);
  EXPECT_EQ(unsupported_plan_reason(named, i32), r->unsupported_plan_reason(i32));
  EXPECT_EQ(*r->unsupported_plan_reason(i32), "Accelerator has no capability for operation 'relu'.");
}

}  // namespace
