// Tests for include/strideweave/carrier.h and the shipped storage carriers
// (include/strideweave/carriers/{generic,cpu}.h): core-concepts.md section 1
// (Carrier) and section 2 (version counters).
//
// The storage contract is one shared suite: every suite below named
// CoreConcepts_<section>_Carrier* is a typed test over `ShippedCarriers`.
// Every carrier of the central list (<strideweave/carriers/shipped.h>) runs
// the whole contract; CarrierUnderTest<C> builds one through its factory.
// Behaviour that only one class has (CPU::wrap) and base-class behaviour that
// no shipped carrier exposes (ownership) have their own suites at the end.
//
// "Bad input leaves everything unchanged" (cpp-mapping.md, "Errors"): every
// failing call is followed by a check that the carrier's values and version
// are exactly what they were.
#include <strideweave/carrier.h>
#include <strideweave/carriers/cpu.h>
#include <strideweave/carriers/generic.h>
#include <strideweave/dtype.h>
#include <strideweave/errors.h>
#include <strideweave/value.h>

#include <gtest/gtest.h>

#include "support/test_owner.h"
#include "support/shipped_types.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "support/expect_exactly.h"

namespace sw = strideweave;
using sw::Carrier;
using sw::DType;
using sw::Value;

namespace {

Value F(float v) { return Value::from_float32(v); }
Value I(std::int32_t v) { return Value::from_int32(v); }
Value B(bool v) { return Value::from_bool(v); }

constexpr std::int64_t kInt64Min = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// ---------------------------------------------------------------------------
// The shared contract suite's registration point.

// How the suite builds a carrier of class C: through the factory every
// shipped carrier provides (<strideweave/carriers/shipped.h>), so each one in
// the central list joins the whole contract with no line here.
template <class C>
struct CarrierUnderTest {
  static constexpr std::string_view kName = C::public_name;
  static std::shared_ptr<Carrier> from_values(const std::vector<Value>& values, const DType& dtype,
                                              bool mutable_ = true) {
    return C::from_values(values, dtype, mutable_);
  }
  // Zero-initialised storage of `size` slots, allocated like a result.
  static std::shared_ptr<Carrier> allocate(std::int64_t size, const DType& dtype, bool mutable_ = true) {
    return C::from_values({}, dtype, true)->allocate_like(size, mutable_, &dtype, /*empty=*/false);
  }
};

using ShippedCarriers = sw_support::ShippedCarrierTypes;  // every shipped carrier (tests/support/shipped_types.h)


// ---------------------------------------------------------------------------
// Helpers.

std::vector<Value> values_of(const Carrier& c) {
  std::vector<Value> out;
  for (std::int64_t i = 0; i < c.size(); ++i) out.push_back(c.get_value(i));
  return out;
}

// Everything observable about a live carrier.
struct State {
  std::vector<Value> values;
  std::uint64_t version;
  bool released;
  bool mutable_;
  friend bool operator==(const State&, const State&) = default;
  friend std::ostream& operator<<(std::ostream& os, const State& s) {
    os << "{version=" << s.version << ", released=" << s.released << ", mutable=" << s.mutable_ << ", values=[";
    for (const Value& v : s.values) os << v.to_string() << ",";
    return os << "]}";
  }
};

State state_of(const Carrier& c) { return {values_of(c), c.version(), c.is_released(), c.is_mutable()}; }

template <class Fn>
std::string thrown_type(Fn&& fn) {
  try {
    fn();
  } catch (const sw::Error& e) {
    return e.type_name();
  }
  return "";
}

template <class Fn>
std::string thrown_message(Fn&& fn) {
  try {
    fn();
  } catch (const sw::Error& e) {
    return e.what();
  }
  return "";
}

// Every dtype that is not Float32, Int32 or Bool: the other built-ins, plus an
// extension simple dtype, an extension category and a compound dtype that
// look as storable as possible.
std::vector<const DType*> unsupported_dtypes() {
  static const std::vector<const DType*> out = [] {
    std::vector<const DType*> v = {&DType::Any(),  &DType::Floating(), &DType::Integer(), &DType::Int8(),
                                   &DType::Float64(), &DType::E8M0(),  &DType::E5M2(),    &DType::E4M3(),
                                   &DType::E3M2(), &DType::E2M3(),     &DType::E2M1()};
    v.push_back(&sw::SimpleDType::create("test_core_carrier.float32_lookalike", 32, DType::Floating()));
    v.push_back(&sw::DTypeCategory::create("test_core_carrier.category", &DType::Any()));
    v.push_back(&sw::PlanarCompoundDType::create("test_core_carrier.compound", {&DType::Float32()}));
    return v;
  }();
  return out;
}

bool is_stored(const DType& d) { return &d == &DType::Float32() || &d == &DType::Int32() || &d == &DType::Bool(); }

// A non-zero value of each stored dtype.
Value sample_of(const DType& d) {
  if (&d == &DType::Int32()) return I(7);
  if (&d == &DType::Bool()) return B(true);
  return F(2.5f);
}
const DType* stored_dtypes[] = {&DType::Float32(), &DType::Int32(), &DType::Bool()};

// A minimal carrier written against the open Carrier base, used where the base
// class's own rules must be observed (ownership) and as a third exact class.
class ProbeCarrier final : public Carrier {
 public:
  ProbeCarrier(const sw::SimpleDType& dtype, bool mutable_, std::vector<Value> values)
      : Carrier(dtype, mutable_), values_(std::move(values)) {}
  bool supports_storage_dtype(const DType& d) const noexcept override {
    return sw::stored_element_kind(d).has_value();
  }

 protected:
  std::int64_t storage_size() const noexcept override { return static_cast<std::int64_t>(values_.size()); }
  Value read_slot(std::int64_t i) const override { return values_[static_cast<std::size_t>(i)]; }
  void write_slot(std::int64_t i, const Value& v) override { values_[static_cast<std::size_t>(i)] = v; }
  void release_storage() noexcept override { values_.clear(); }
  std::shared_ptr<Carrier> make_like(std::int64_t size, bool mutable_, const sw::SimpleDType& dtype,
                                     bool) const override {
    return std::make_shared<ProbeCarrier>(dtype, mutable_,
                                          std::vector<Value>(static_cast<std::size_t>(size), *sw::storage_zero(dtype)));
  }

 private:
  std::vector<Value> values_;
};

}  // namespace

// ---------------------------------------------------------------------------
// Compile-time guarantees (core-concepts.md 1.1, 1.2, 1.8 as mapped to C++).

// 1.1 "Non-integer index -> TypeError": the index is std::int64_t, so a
// string, a C string, a null pointer or a floating-point number (deleted
// overloads, so it is never truncated) does not compile.
template <class Index>
concept ReadableAt = requires(const Carrier& c, Index i) { c.get_value(i); };
template <class Index>
concept SubscriptableAt = requires(const Carrier& c, Index i) { c[i]; };
template <class Index>
concept WritableAt = requires(Carrier& c, Index i, Value v) { c.set_value(i, v); };
static_assert(ReadableAt<std::int64_t> && SubscriptableAt<std::int64_t> && WritableAt<std::int64_t>);
static_assert(!ReadableAt<std::string> && !ReadableAt<const char*> && !ReadableAt<std::nullptr_t>);
static_assert(!SubscriptableAt<std::string> && !SubscriptableAt<const char*>);
static_assert(!WritableAt<std::string> && !WritableAt<const char*> && !WritableAt<std::nullptr_t>);
static_assert(!ReadableAt<double> && !ReadableAt<float> && !SubscriptableAt<double> && !WritableAt<double>);
// set_value takes a Value, never a raw number or string.
template <class V>
concept StorableValue = requires(Carrier& c, V v) { c.set_value(0, v); };
static_assert(StorableValue<Value> && !StorableValue<std::string> && !StorableValue<float>);
// 1.2 "non-DType -> TypeError": supports_storage_dtype takes a DType.
template <class D>
concept DTypeQuery = requires(const Carrier& c, D d) { c.supports_storage_dtype(d); };
static_assert(DTypeQuery<const DType&> && !DTypeQuery<std::string> && !DTypeQuery<const char*> &&
              !DTypeQuery<std::nullptr_t>);
// Carriers are identities held by shared_ptr: never copied.
static_assert(!std::is_copy_constructible_v<Carrier> && !std::is_copy_assignable_v<Carrier>);
static_assert(!std::is_copy_constructible_v<sw::CPU> && !std::is_copy_constructible_v<sw::Generic>);
// 1.8 "Shipped carriers are closed to subclassing; Carrier is open."
static_assert(std::is_final_v<sw::Generic> && std::is_final_v<sw::CPU>);
static_assert(!std::is_final_v<Carrier>);

TEST(CoreConcepts_1_1_CarrierInterface, NonIntegerIndexIsRejectedAtCompileTime) {
  EXPECT_FALSE(ReadableAt<std::string>);
  EXPECT_FALSE(WritableAt<std::string>);
  EXPECT_FALSE(ReadableAt<double>);
  EXPECT_FALSE(WritableAt<float>);
  EXPECT_TRUE(ReadableAt<std::int64_t>);
}

// ===========================================================================
// 1.1 Slots: size, dtype, reads, writes and their errors.

template <class C>
class CoreConcepts_1_1_Carrier : public ::testing::Test {};
TYPED_TEST_SUITE(CoreConcepts_1_1_Carrier, ShippedCarriers, sw_support::ShippedCarrierName);

TYPED_TEST(CoreConcepts_1_1_Carrier, SizeAndDtypeAreTheConstructionArguments) {
  using Make = CarrierUnderTest<TypeParam>;
  auto f = Make::from_values({F(1), F(2), F(3)}, DType::Float32());
  EXPECT_EQ(f->size(), 3);
  EXPECT_EQ(&f->dtype(), &DType::Float32());
  auto i = Make::from_values({I(4), I(5)}, DType::Int32());
  EXPECT_EQ(i->size(), 2);
  EXPECT_EQ(&i->dtype(), &DType::Int32());
  auto b = Make::allocate(5, DType::Bool());
  EXPECT_EQ(b->size(), 5);
  EXPECT_EQ(&b->dtype(), &DType::Bool());
  auto empty = Make::from_values({}, DType::Float32());
  EXPECT_EQ(empty->size(), 0);
  EXPECT_EQ(Make::allocate(0, DType::Int32())->size(), 0);
}

TYPED_TEST(CoreConcepts_1_1_Carrier, GetValueAndSubscriptReadEachSlot) {
  using Make = CarrierUnderTest<TypeParam>;
  auto c = Make::from_values({F(1.5f), F(-2), F(3.25f), F(0)}, DType::Float32());
  EXPECT_EQ(c->get_value(0), F(1.5f));
  EXPECT_EQ(c->get_value(1), F(-2));
  EXPECT_EQ(c->get_value(2), F(3.25f));
  EXPECT_EQ(c->get_value(3), F(0));
  EXPECT_EQ((*c)[2], F(3.25f));
  EXPECT_EQ((*c)[0], c->get_value(0));
}

TYPED_TEST(CoreConcepts_1_1_Carrier, SetValueWritesExactlyOneSlot) {
  using Make = CarrierUnderTest<TypeParam>;
  auto c = Make::from_values({I(10), I(20), I(30)}, DType::Int32());
  c->set_value(1, I(-7));
  EXPECT_EQ(values_of(*c), (std::vector<Value>{I(10), I(-7), I(30)}));
  c->set_value(0, I(1));
  c->set_value(2, I(3));
  EXPECT_EQ(values_of(*c), (std::vector<Value>{I(1), I(-7), I(3)}));
  EXPECT_EQ((*c)[1], I(-7));
}

TYPED_TEST(CoreConcepts_1_1_Carrier, RoundTripsEveryStoredDtypeBitExactly) {
  using Make = CarrierUnderTest<TypeParam>;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<Value> floats = {F(-0.0f), F(nan), F(std::numeric_limits<float>::infinity()),
                                     F(std::numeric_limits<float>::denorm_min()), F(3.4e38f)};
  auto f = Make::allocate(static_cast<std::int64_t>(floats.size()), DType::Float32());
  for (std::size_t k = 0; k < floats.size(); ++k) f->set_value(static_cast<std::int64_t>(k), floats[k]);
  EXPECT_EQ(values_of(*f), floats);
  EXPECT_NE(f->get_value(0), F(0.0f));  // -0.0 stays negative
  EXPECT_EQ(values_of(*Make::from_values(floats, DType::Float32())), floats);

  const std::vector<Value> ints = {I(std::numeric_limits<std::int32_t>::min()),
                                   I(std::numeric_limits<std::int32_t>::max()), I(0), I(-1)};
  auto i = Make::allocate(4, DType::Int32());
  for (std::int64_t k = 0; k < 4; ++k) i->set_value(k, ints[static_cast<std::size_t>(k)]);
  EXPECT_EQ(values_of(*i), ints);

  auto b = Make::from_values({B(true), B(false), B(true)}, DType::Bool());
  EXPECT_EQ(values_of(*b), (std::vector<Value>{B(true), B(false), B(true)}));
  b->set_value(0, B(false));
  b->set_value(1, B(true));
  EXPECT_EQ(values_of(*b), (std::vector<Value>{B(false), B(true), B(true)}));
}

TYPED_TEST(CoreConcepts_1_1_Carrier, OutOfRangeIndexRaisesIndexError) {
  using Make = CarrierUnderTest<TypeParam>;
  auto c = Make::from_values({F(1), F(2), F(3)}, DType::Float32());
  const State before = state_of(*c);
  for (std::int64_t bad : {std::int64_t{-1}, std::int64_t{3}, std::int64_t{4}, kInt64Min, kInt64Max}) {
    SCOPED_TRACE(bad);
    EXPECT_THROW_EXACTLY(c->get_value(bad), sw::IndexError);
    EXPECT_THROW_EXACTLY((*c)[bad], sw::IndexError);
    EXPECT_THROW_EXACTLY(c->set_value(bad, F(9)), sw::IndexError);
    EXPECT_EQ(state_of(*c), before);
  }
  EXPECT_EQ(thrown_type([&] { c->get_value(-1); }), "IndexError");
  EXPECT_EQ(thrown_type([&] { c->set_value(3, F(0)); }), "IndexError");
  // IndexError is a LookupError (Python's hierarchy).
  EXPECT_THROW(c->get_value(3), sw::LookupError);  // a base-class catch on purpose
}

TYPED_TEST(CoreConcepts_1_1_Carrier, EveryIndexOfAnEmptyCarrierRaisesIndexError) {
  using Make = CarrierUnderTest<TypeParam>;
  auto c = Make::allocate(0, DType::Int32());
  EXPECT_THROW_EXACTLY(c->get_value(0), sw::IndexError);
  EXPECT_THROW_EXACTLY(c->get_value(-1), sw::IndexError);
  EXPECT_THROW_EXACTLY(c->set_value(0, I(1)), sw::IndexError);
  EXPECT_EQ(c->version(), 0u);
}

TYPED_TEST(CoreConcepts_1_1_Carrier, IndexErrorNamesTheOperationAndTheCarrier) {
  using Make = CarrierUnderTest<TypeParam>;
  auto c = Make::from_values({F(1), F(2)}, DType::Float32());
  const std::string read = thrown_message([&] { c->get_value(2); });
  EXPECT_NE(read.find("get_value"), std::string::npos) << read;
  EXPECT_NE(read.find(Make::kName), std::string::npos) << read;
  const std::string write = thrown_message([&] { c->set_value(-1, F(0)); });
  EXPECT_NE(write.find("set_value"), std::string::npos) << write;
  EXPECT_NE(write.find(Make::kName), std::string::npos) << write;
}

TYPED_TEST(CoreConcepts_1_1_Carrier, WriteOnImmutableCarrierRaisesRuntimeError) {
  using Make = CarrierUnderTest<TypeParam>;
  auto c = Make::from_values({F(1), F(2), F(3)}, DType::Float32(), /*mutable_=*/false);
  EXPECT_FALSE(c->is_mutable());
  const State before = state_of(*c);
  EXPECT_THROW_EXACTLY(c->set_value(0, F(9)), sw::RuntimeError);
  EXPECT_THROW_EXACTLY(c->set_value(2, F(9)), sw::RuntimeError);
  // Immutability is checked before the index and the value kind.
  EXPECT_THROW_EXACTLY(c->set_value(5, F(9)), sw::RuntimeError);
  EXPECT_THROW_EXACTLY(c->set_value(0, I(9)), sw::RuntimeError);
  EXPECT_EQ(state_of(*c), before);
  EXPECT_EQ(thrown_type([&] { c->set_value(0, F(9)); }), "RuntimeError");
  // Reads still work.
  EXPECT_EQ(c->get_value(1), F(2));
  EXPECT_EQ(values_of(*c), (std::vector<Value>{F(1), F(2), F(3)}));

  auto zeros = Make::allocate(2, DType::Bool(), /*mutable_=*/false);
  EXPECT_THROW_EXACTLY(zeros->set_value(0, B(true)), sw::RuntimeError);
  EXPECT_EQ(values_of(*zeros), (std::vector<Value>{B(false), B(false)}));
}

TYPED_TEST(CoreConcepts_1_1_Carrier, StoringAValueOfAnotherKindRaisesTypeError) {
  using Make = CarrierUnderTest<TypeParam>;
  for (const DType* d : stored_dtypes) {
    SCOPED_TRACE(d->name());
    auto c = Make::from_values({sample_of(*d), sample_of(*d)}, *d);
    const State before = state_of(*c);
    for (const Value& wrong : {F(1), I(1), B(true)}) {
      if (&sw::dtype_of(wrong.kind) == d) continue;
      EXPECT_THROW_EXACTLY(c->set_value(0, wrong), sw::TypeError);
      EXPECT_THROW_EXACTLY(c->set_value(1, wrong), sw::TypeError);
    }
    EXPECT_EQ(state_of(*c), before);
  }
  auto f = Make::from_values({F(1)}, DType::Float32());
  const std::string message = thrown_message([&] { f->set_value(0, I(3)); });
  EXPECT_NE(message.find("int32"), std::string::npos) << message;
  EXPECT_NE(message.find("float32"), std::string::npos) << message;
  // A range error wins over a kind error (index is checked first).
  EXPECT_THROW_EXACTLY(f->set_value(1, I(3)), sw::IndexError);
}

TYPED_TEST(CoreConcepts_1_1_Carrier, ConstructingFromValuesOfAnotherKindRaisesTypeError) {
  using Make = CarrierUnderTest<TypeParam>;
  EXPECT_THROW_EXACTLY(Make::from_values({F(1), I(2)}, DType::Float32()), sw::TypeError);
  EXPECT_THROW_EXACTLY(Make::from_values({I(1)}, DType::Bool()), sw::TypeError);
  EXPECT_THROW_EXACTLY(Make::from_values({B(true)}, DType::Int32()), sw::TypeError);
}

// ===========================================================================
// 1.2 Storage dtype support and constructor validation.

template <class C>
class CoreConcepts_1_2_Carrier : public ::testing::Test {};
TYPED_TEST_SUITE(CoreConcepts_1_2_Carrier, ShippedCarriers, sw_support::ShippedCarrierName);

TYPED_TEST(CoreConcepts_1_2_Carrier, SupportsExactlyFloat32Int32AndBool) {
  using Make = CarrierUnderTest<TypeParam>;
  auto c = Make::allocate(2, DType::Float32());
  EXPECT_TRUE(c->supports_storage_dtype(DType::Float32()));
  EXPECT_TRUE(c->supports_storage_dtype(DType::Int32()));
  EXPECT_TRUE(c->supports_storage_dtype(DType::Bool()));
  EXPECT_FALSE(c->supports_storage_dtype(DType::Float64()));
  EXPECT_FALSE(c->supports_storage_dtype(DType::Int8()));
  EXPECT_FALSE(c->supports_storage_dtype(DType::Any()));
  EXPECT_FALSE(c->supports_storage_dtype(DType::Floating()));
  EXPECT_FALSE(c->supports_storage_dtype(DType::Integer()));
  for (const DType* d : unsupported_dtypes()) {
    SCOPED_TRACE(d->name());
    EXPECT_FALSE(c->supports_storage_dtype(*d));
    EXPECT_FALSE(TypeParam::supports(*d));
  }
  // Every registered dtype, whatever other tests registered.
  for (const DType* d : DType::registered()) {
    SCOPED_TRACE(d->name());
    EXPECT_EQ(c->supports_storage_dtype(*d), is_stored(*d));
  }
}

TYPED_TEST(CoreConcepts_1_2_Carrier, SupportIsIdentityBased) {
  using Make = CarrierUnderTest<TypeParam>;
  auto c = Make::allocate(1, DType::Float32());
  // Same bits, same supertype, different identity.
  (void)unsupported_dtypes();  // registers the look-alike once
  const DType& lookalike = DType::from_name("test_core_carrier.float32_lookalike");
  ASSERT_TRUE(lookalike.is_simple());
  EXPECT_EQ(lookalike.bits(), DType::Float32().bits());
  EXPECT_EQ(lookalike.supertype(), DType::Float32().supertype());
  EXPECT_FALSE(c->supports_storage_dtype(lookalike));
  EXPECT_THROW_EXACTLY(Make::allocate(1, lookalike), sw::ValueError);
}

TYPED_TEST(CoreConcepts_1_2_Carrier, SupportIsIndependentOfCarrierState) {
  using Make = CarrierUnderTest<TypeParam>;
  std::vector<std::shared_ptr<Carrier>> carriers = {
      Make::allocate(3, DType::Float32()), Make::allocate(0, DType::Int32()),
      Make::from_values({B(true)}, DType::Bool(), /*mutable_=*/false), Make::allocate(4, DType::Float32())};
  carriers.back()->release();
  for (const auto& c : carriers) {
    for (const DType* d : DType::registered()) {
      SCOPED_TRACE(d->name());
      EXPECT_EQ(c->supports_storage_dtype(*d), is_stored(*d));
    }
  }
  EXPECT_EQ(carriers.back()->version(), 0u);
}

TYPED_TEST(CoreConcepts_1_2_Carrier, ConstructingWithAnUnsupportedDtypeRaisesValueError) {
  using Make = CarrierUnderTest<TypeParam>;
  for (const DType* d : unsupported_dtypes()) {
    SCOPED_TRACE(d->name());
    EXPECT_THROW_EXACTLY(Make::from_values({}, *d), sw::ValueError);
    EXPECT_THROW_EXACTLY(Make::from_values({F(1)}, *d), sw::ValueError);
    EXPECT_THROW_EXACTLY(Make::allocate(3, *d), sw::ValueError);
    EXPECT_THROW_EXACTLY(Make::allocate(0, *d), sw::ValueError);
  }
  const std::string message = thrown_message([] { Make::allocate(1, DType::Float64()); });
  EXPECT_NE(message.find("float64"), std::string::npos) << message;
  EXPECT_NE(message.find(CarrierUnderTest<TypeParam>::kName), std::string::npos) << message;
}

TYPED_TEST(CoreConcepts_1_2_Carrier, NegativeSizeRaisesValueError) {
  using Make = CarrierUnderTest<TypeParam>;
  EXPECT_THROW_EXACTLY(Make::allocate(-1, DType::Float32()), sw::ValueError);
  EXPECT_THROW_EXACTLY(Make::allocate(kInt64Min, DType::Int32()), sw::ValueError);
}

// ===========================================================================
// 1.3 Initialised storage holds the dtype's zero.

template <class C>
class CoreConcepts_1_3_Carrier : public ::testing::Test {};
TYPED_TEST_SUITE(CoreConcepts_1_3_Carrier, ShippedCarriers, sw_support::ShippedCarrierName);

TYPED_TEST(CoreConcepts_1_3_Carrier, AllocationIsZeroInitialised) {
  using Make = CarrierUnderTest<TypeParam>;
  EXPECT_EQ(values_of(*Make::allocate(3, DType::Float32())), (std::vector<Value>{F(0), F(0), F(0)}));
  EXPECT_EQ(values_of(*Make::allocate(2, DType::Int32())), (std::vector<Value>{I(0), I(0)}));
  EXPECT_EQ(values_of(*Make::allocate(4, DType::Bool())), (std::vector<Value>(4, B(false))));
  for (const DType* d : stored_dtypes) {
    auto c = Make::allocate(5, *d);
    for (const Value& v : values_of(*c)) EXPECT_EQ(v, *sw::storage_zero(*d)) << d->name();
  }
}

// ===========================================================================
// 1.4 new_like and allocate_like.

template <class C>
class CoreConcepts_1_4_Carrier : public ::testing::Test {};
TYPED_TEST_SUITE(CoreConcepts_1_4_Carrier, ShippedCarriers, sw_support::ShippedCarrierName);

TYPED_TEST(CoreConcepts_1_4_Carrier, NewLikeReturnsTheSameExactClassHoldingTheValues) {
  using Make = CarrierUnderTest<TypeParam>;
  auto proto = Make::from_values({F(1), F(2)}, DType::Float32());
  const std::vector<Value> vs = {F(7), F(8), F(9)};
  auto fresh = proto->new_like(vs);
  ASSERT_NE(fresh, nullptr);
  EXPECT_NE(fresh.get(), proto.get());
  EXPECT_EQ(fresh->exact_class(), proto->exact_class());
  EXPECT_EQ(fresh->exact_class(), sw::carrier_class<TypeParam>());
  EXPECT_NE(dynamic_cast<TypeParam*>(fresh.get()), nullptr);
  EXPECT_EQ(&fresh->dtype(), &DType::Float32());
  EXPECT_TRUE(fresh->is_mutable());
  EXPECT_EQ(values_of(*fresh), vs);
  EXPECT_EQ(values_of(*proto), (std::vector<Value>{F(1), F(2)}));
}

TYPED_TEST(CoreConcepts_1_4_Carrier, NewLikeHonoursDtypeAndMutable) {
  using Make = CarrierUnderTest<TypeParam>;
  auto proto = Make::from_values({F(1)}, DType::Float32());
  const std::vector<Value> ints = {I(3), I(4)};
  auto fresh = proto->new_like(ints, /*mutable_=*/false, &DType::Int32());
  EXPECT_EQ(&fresh->dtype(), &DType::Int32());
  EXPECT_FALSE(fresh->is_mutable());
  EXPECT_EQ(values_of(*fresh), ints);  // immutable storage still receives its values
  EXPECT_THROW_EXACTLY(fresh->set_value(0, I(0)), sw::RuntimeError);
  EXPECT_EQ(values_of(*fresh), ints);
  // An immutable prototype still makes mutable storage by default.
  auto frozen = Make::from_values({B(true)}, DType::Bool(), /*mutable_=*/false);
  const std::vector<Value> bools = {B(false), B(true)};
  auto thawed = frozen->new_like(bools);
  EXPECT_TRUE(thawed->is_mutable());
  EXPECT_EQ(&thawed->dtype(), &DType::Bool());
  thawed->set_value(0, B(true));
  EXPECT_EQ(values_of(*thawed), (std::vector<Value>{B(true), B(true)}));
  // Empty values give empty storage.
  EXPECT_EQ(proto->new_like(std::vector<Value>{})->size(), 0);
}

TYPED_TEST(CoreConcepts_1_4_Carrier, NewLikeWithValuesOfAnotherKindRaisesTypeError) {
  using Make = CarrierUnderTest<TypeParam>;
  auto proto = Make::from_values({F(1), F(2)}, DType::Float32());
  const State before = state_of(*proto);
  const std::vector<Value> mixed = {F(1), I(2)};
  EXPECT_THROW_EXACTLY(proto->new_like(mixed), sw::TypeError);
  const std::vector<Value> floats = {F(1)};
  EXPECT_THROW_EXACTLY(proto->new_like(floats, true, &DType::Int32()), sw::TypeError);
  EXPECT_EQ(state_of(*proto), before);
}

TYPED_TEST(CoreConcepts_1_4_Carrier, LikeWithAnUnsupportedDtypeRaisesValueError) {
  using Make = CarrierUnderTest<TypeParam>;
  auto proto = Make::from_values({I(1), I(2)}, DType::Int32());
  const State before = state_of(*proto);
  for (const DType* d : unsupported_dtypes()) {
    SCOPED_TRACE(d->name());
    EXPECT_THROW_EXACTLY(proto->new_like(std::vector<Value>{}, true, d), sw::ValueError);
    EXPECT_THROW_EXACTLY(proto->allocate_like(2, true, d), sw::ValueError);
    EXPECT_THROW_EXACTLY(proto->allocate_like(2, true, d, /*empty=*/true), sw::ValueError);
  }
  EXPECT_EQ(state_of(*proto), before);
}

TYPED_TEST(CoreConcepts_1_4_Carrier, AllocateLikeReturnsZeroedStorageOfTheSameExactClass) {
  using Make = CarrierUnderTest<TypeParam>;
  auto proto = Make::from_values({F(5), F(6)}, DType::Float32());
  auto fresh = proto->allocate_like(4);
  EXPECT_EQ(fresh->exact_class(), sw::carrier_class<TypeParam>());
  EXPECT_EQ(fresh->size(), 4);
  EXPECT_EQ(&fresh->dtype(), &DType::Float32());
  EXPECT_TRUE(fresh->is_mutable());
  EXPECT_EQ(values_of(*fresh), (std::vector<Value>(4, F(0))));
  for (const DType* d : stored_dtypes) {
    SCOPED_TRACE(d->name());
    auto other = proto->allocate_like(3, /*mutable_=*/false, d);
    EXPECT_EQ(other->exact_class(), sw::carrier_class<TypeParam>());
    EXPECT_EQ(&other->dtype(), d);
    EXPECT_FALSE(other->is_mutable());
    EXPECT_EQ(values_of(*other), (std::vector<Value>(3, *sw::storage_zero(*d))));
    EXPECT_THROW_EXACTLY(other->set_value(0, sample_of(*d)), sw::RuntimeError);
  }
  EXPECT_EQ(proto->allocate_like(0)->size(), 0);
}

TYPED_TEST(CoreConcepts_1_4_Carrier, AllocateLikeEmptyGivesWritableStorageOfTheRightSize) {
  using Make = CarrierUnderTest<TypeParam>;
  auto proto = Make::from_values({I(5)}, DType::Int32());
  auto fresh = proto->allocate_like(6, true, nullptr, /*empty=*/true);
  EXPECT_EQ(fresh->exact_class(), sw::carrier_class<TypeParam>());
  EXPECT_EQ(fresh->size(), 6);
  EXPECT_EQ(&fresh->dtype(), &DType::Int32());
  // The contents are unspecified; every slot is writable and readable.
  for (std::int64_t k = 0; k < 6; ++k) fresh->set_value(k, I(static_cast<std::int32_t>(10 * k)));
  EXPECT_EQ(values_of(*fresh), (std::vector<Value>{I(0), I(10), I(20), I(30), I(40), I(50)}));
  auto frozen = proto->allocate_like(2, /*mutable_=*/false, &DType::Float32(), /*empty=*/true);
  EXPECT_FALSE(frozen->is_mutable());
  EXPECT_EQ(&frozen->dtype(), &DType::Float32());
  EXPECT_EQ(frozen->size(), 2);
}

TYPED_TEST(CoreConcepts_1_4_Carrier, AllocateLikeNegativeSizeRaisesValueError) {
  using Make = CarrierUnderTest<TypeParam>;
  auto proto = Make::from_values({F(1)}, DType::Float32());
  const State before = state_of(*proto);
  EXPECT_THROW_EXACTLY(proto->allocate_like(-1), sw::ValueError);
  EXPECT_THROW_EXACTLY(proto->allocate_like(-5, true, nullptr, true), sw::ValueError);
  EXPECT_EQ(state_of(*proto), before);
}

TYPED_TEST(CoreConcepts_1_4_Carrier, LikeWorksOnAReleasedPrototype) {
  using Make = CarrierUnderTest<TypeParam>;
  auto proto = Make::from_values({F(1), F(2)}, DType::Float32(), /*mutable_=*/false);
  proto->release();
  const std::vector<Value> vs = {F(3), F(4)};
  auto fresh = proto->new_like(vs);
  EXPECT_EQ(fresh->exact_class(), sw::carrier_class<TypeParam>());
  EXPECT_FALSE(fresh->is_released());
  EXPECT_TRUE(fresh->is_mutable());
  EXPECT_EQ(&fresh->dtype(), &DType::Float32());
  EXPECT_EQ(values_of(*fresh), vs);
  auto allocated = proto->allocate_like(3, true, &DType::Bool());
  EXPECT_EQ(allocated->exact_class(), sw::carrier_class<TypeParam>());
  EXPECT_EQ(values_of(*allocated), (std::vector<Value>(3, B(false))));
  EXPECT_TRUE(proto->is_released());
}

TYPED_TEST(CoreConcepts_1_4_Carrier, FreshStorageIsIndependentOfThePrototype) {
  using Make = CarrierUnderTest<TypeParam>;
  auto proto = Make::from_values({F(1), F(2)}, DType::Float32());
  const std::vector<Value> vs = {F(1), F(2)};
  auto fresh = proto->new_like(vs);
  fresh->set_value(0, F(100));
  proto->set_value(1, F(200));
  EXPECT_EQ(values_of(*proto), (std::vector<Value>{F(1), F(200)}));
  EXPECT_EQ(values_of(*fresh), (std::vector<Value>{F(100), F(2)}));
  fresh->release();
  EXPECT_FALSE(proto->is_released());
  EXPECT_EQ(proto->get_value(0), F(1));
}

// ===========================================================================
// 1.5 Mutability.

template <class C>
class CoreConcepts_1_5_Carrier : public ::testing::Test {};
TYPED_TEST_SUITE(CoreConcepts_1_5_Carrier, ShippedCarriers, sw_support::ShippedCarrierName);

TYPED_TEST(CoreConcepts_1_5_Carrier, IsMutableIsTheIntrinsicMutabilityOfAnUnownedCarrier) {
  using Make = CarrierUnderTest<TypeParam>;
  auto m = Make::allocate(1, DType::Float32(), true);
  auto f = Make::allocate(1, DType::Float32(), false);
  EXPECT_TRUE(m->is_mutable());
  EXPECT_FALSE(f->is_mutable());
  EXPECT_FALSE(m->is_owned());
  EXPECT_FALSE(f->is_owned());
  // Default construction is mutable.
  EXPECT_TRUE(Make::from_values({F(1)}, DType::Float32())->is_mutable());
}

// No shipped core carrier takes ownership (the composites do); the base
// class's rule is observed through a minimal carrier on the open base.
TEST(CoreConcepts_1_5_Mutability, OwnedCarrierIsNotPubliclyMutable) {
  auto c = std::make_shared<ProbeCarrier>(DType::Int32(), true, std::vector<Value>{I(1), I(2)});
  c->set_value(0, I(5));
  ASSERT_EQ(c->version(), 1u);
  auto owner = sw_support::TestOwner::claiming(c);
  EXPECT_TRUE(c->is_owned());
  EXPECT_FALSE(c->is_mutable());
  const State before = state_of(*c);
  EXPECT_THROW_EXACTLY(c->set_value(1, I(9)), sw::RuntimeError);
  const std::string message = thrown_message([&] { c->set_value(1, I(9)); });
  EXPECT_NE(message.find("owned"), std::string::npos) << message;
  // Releasing an owned carrier -> RuntimeError (1.6), and it stays live.
  EXPECT_THROW_EXACTLY(c->release(), sw::RuntimeError);
  EXPECT_FALSE(c->is_released());
  // Aliases may still read.
  EXPECT_EQ(c->get_value(0), I(5));
  EXPECT_EQ(state_of(*c), before);
  // Relinquished ownership restores intrinsic mutability.
  owner->give_back(*c);
  EXPECT_TRUE(c->is_mutable());
  c->set_value(1, I(9));
  EXPECT_EQ(values_of(*c), (std::vector<Value>{I(5), I(9)}));
  EXPECT_EQ(c->version(), 2u);
}

TEST(CoreConcepts_1_5_Mutability, OwnershipNeverMakesAnImmutableCarrierMutable) {
  auto c = std::make_shared<ProbeCarrier>(DType::Bool(), false, std::vector<Value>{B(true)});
  auto owner = sw_support::TestOwner::claiming(c);
  EXPECT_FALSE(c->is_mutable());
  owner->give_back(*c);
  EXPECT_FALSE(c->is_mutable());
  EXPECT_THROW_EXACTLY(c->set_value(0, B(false)), sw::RuntimeError);
  EXPECT_EQ(c->get_value(0), B(true));
}

// ===========================================================================
// 1.6 Release.

template <class C>
class CoreConcepts_1_6_Carrier : public ::testing::Test {};
TYPED_TEST_SUITE(CoreConcepts_1_6_Carrier, ShippedCarriers, sw_support::ShippedCarrierName);

TYPED_TEST(CoreConcepts_1_6_Carrier, ReleaseIsPermanentAndIdempotent) {
  using Make = CarrierUnderTest<TypeParam>;
  auto c = Make::from_values({F(1), F(2)}, DType::Float32());
  EXPECT_FALSE(c->is_released());
  c->release();
  EXPECT_TRUE(c->is_released());
  EXPECT_NO_THROW(c->release());
  EXPECT_NO_THROW(c->release());
  EXPECT_TRUE(c->is_released());
  EXPECT_THROW_EXACTLY(c->get_value(0), sw::RuntimeError);
}

TYPED_TEST(CoreConcepts_1_6_Carrier, AfterReleaseAccessAndMutationRaiseRuntimeError) {
  using Make = CarrierUnderTest<TypeParam>;
  auto c = Make::from_values({I(1), I(2), I(3)}, DType::Int32());
  c->set_value(0, I(4));
  c->release();
  EXPECT_THROW_EXACTLY(c->size(), sw::RuntimeError);
  EXPECT_THROW_EXACTLY(c->get_value(0), sw::RuntimeError);
  EXPECT_THROW_EXACTLY((*c)[1], sw::RuntimeError);
  EXPECT_THROW_EXACTLY(c->set_value(0, I(9)), sw::RuntimeError);
  // Released is reported before range and kind problems.
  EXPECT_THROW_EXACTLY(c->get_value(-1), sw::RuntimeError);
  EXPECT_THROW_EXACTLY(c->get_value(3), sw::RuntimeError);
  EXPECT_THROW_EXACTLY(c->set_value(7, I(9)), sw::RuntimeError);
  EXPECT_THROW_EXACTLY(c->set_value(0, F(9)), sw::RuntimeError);
  // Exactly RuntimeError (not a subclass such as NotImplementedError).
  EXPECT_EQ(thrown_type([&] { c->get_value(0); }), "RuntimeError");
  EXPECT_EQ(thrown_type([&] { c->set_value(0, I(1)); }), "RuntimeError");
  const std::string message = thrown_message([&] { c->get_value(0); });
  EXPECT_NE(message.find("released"), std::string::npos) << message;
  EXPECT_EQ(c->version(), 1u);
  EXPECT_TRUE(c->is_released());
}

TYPED_TEST(CoreConcepts_1_6_Carrier, AfterReleaseDtypeSupportAndNewLikeStillWork) {
  using Make = CarrierUnderTest<TypeParam>;
  auto c = Make::from_values({B(true), B(false)}, DType::Bool());
  c->release();
  EXPECT_EQ(&c->dtype(), &DType::Bool());
  EXPECT_TRUE(c->supports_storage_dtype(DType::Float32()));
  EXPECT_FALSE(c->supports_storage_dtype(DType::Float64()));
  EXPECT_EQ(c->exact_class(), sw::carrier_class<TypeParam>());
  EXPECT_EQ(c->class_name(), CarrierUnderTest<TypeParam>::kName);
  const std::vector<Value> vs = {B(true)};
  EXPECT_EQ(values_of(*c->new_like(vs)), vs);
  EXPECT_FALSE(c->is_owned());
}

TYPED_TEST(CoreConcepts_1_6_Carrier, ReleaseOfOneCarrierLeavesOthersLive) {
  using Make = CarrierUnderTest<TypeParam>;
  auto a = Make::from_values({F(1)}, DType::Float32());
  auto b = Make::from_values({F(2)}, DType::Float32());
  a->release();
  EXPECT_FALSE(b->is_released());
  EXPECT_EQ(b->get_value(0), F(2));
}

// ===========================================================================
// 1.8 Exact-class identity.

template <class C>
class CoreConcepts_1_8_Carrier : public ::testing::Test {};
TYPED_TEST_SUITE(CoreConcepts_1_8_Carrier, ShippedCarriers, sw_support::ShippedCarrierName);

TYPED_TEST(CoreConcepts_1_8_Carrier, ExactClassIsTheMostDerivedClass) {
  using Make = CarrierUnderTest<TypeParam>;
  auto c = Make::allocate(1, DType::Float32());
  EXPECT_EQ(c->exact_class(), sw::carrier_class<TypeParam>());
  EXPECT_NE(c->exact_class(), sw::carrier_class<Carrier>());  // never the base class
  EXPECT_NE(c->exact_class(), sw::carrier_class<ProbeCarrier>());
  EXPECT_EQ(c->class_name(), CarrierUnderTest<TypeParam>::kName);
  EXPECT_EQ(c->exact_class().cpp_name(), std::string("strideweave::") + std::string(CarrierUnderTest<TypeParam>::kName));
  // Every instance of the class names the same CarrierClass.
  auto d = Make::allocate(2, DType::Bool(), false);
  EXPECT_EQ(c->exact_class(), d->exact_class());
  EXPECT_EQ(std::hash<sw::CarrierClass>{}(c->exact_class()), std::hash<sw::CarrierClass>{}(d->exact_class()));
}

TEST(CoreConcepts_1_8_CarrierClass, GenericAndCPUAreDifferentClasses) {
  auto g = sw::Generic::zeros(1, DType::Float32());
  auto c = sw::CPU::create(1);
  EXPECT_NE(g->exact_class(), c->exact_class());
  EXPECT_NE(sw::carrier_class<sw::Generic>(), sw::carrier_class<sw::CPU>());
  EXPECT_EQ(g->exact_class(), sw::carrier_class<sw::Generic>());
  EXPECT_EQ(c->exact_class(), sw::carrier_class<sw::CPU>());
  // Usable as a registry key, keyed by exact class.
  std::unordered_map<sw::CarrierClass, int> table;
  table.emplace(sw::carrier_class<sw::Generic>(), 1);
  table.emplace(sw::carrier_class<sw::CPU>(), 2);
  EXPECT_EQ(table.at(g->exact_class()), 1);
  EXPECT_EQ(table.at(c->exact_class()), 2);
  EXPECT_EQ(table.count(sw::carrier_class<Carrier>()), 0u);
}

TEST(CoreConcepts_1_8_CarrierClass, AnExtensionCarrierIsItsOwnExactClass) {
  auto p = std::make_shared<ProbeCarrier>(DType::Float32(), true, std::vector<Value>{F(1)});
  EXPECT_EQ(p->exact_class(), sw::carrier_class<ProbeCarrier>());
  EXPECT_NE(p->exact_class(), sw::carrier_class<Carrier>());
  // The base's new_like produces the extension's own class.
  const std::vector<Value> vs = {F(2), F(3)};
  auto fresh = p->new_like(vs);
  EXPECT_EQ(fresh->exact_class(), sw::carrier_class<ProbeCarrier>());
  EXPECT_EQ(values_of(*fresh), vs);
  EXPECT_EQ(fresh->version(), 0u);
}

// ===========================================================================
// 2.1 Version counters.

template <class C>
class CoreConcepts_2_1_Version : public ::testing::Test {};
TYPED_TEST_SUITE(CoreConcepts_2_1_Version, ShippedCarriers, sw_support::ShippedCarrierName);

TYPED_TEST(CoreConcepts_2_1_Version, StartsAtZeroForEveryConstruction) {
  using Make = CarrierUnderTest<TypeParam>;
  auto a = Make::from_values({F(1), F(2)}, DType::Float32());
  auto b = Make::allocate(3, DType::Int32());
  auto c = Make::from_values({B(true)}, DType::Bool(), /*mutable_=*/false);
  EXPECT_EQ(a->version(), 0u);
  EXPECT_EQ(b->version(), 0u);
  EXPECT_EQ(c->version(), 0u);
  a->set_value(0, F(5));
  a->set_value(1, F(6));
  // Fresh storage from a prototype that was written starts at zero too.
  const std::vector<Value> vs = {F(1), F(2), F(3)};
  EXPECT_EQ(a->new_like(vs)->version(), 0u);
  EXPECT_EQ(a->allocate_like(4)->version(), 0u);
  EXPECT_EQ(a->allocate_like(4, true, nullptr, true)->version(), 0u);
  EXPECT_EQ(a->version(), 2u);
}

TYPED_TEST(CoreConcepts_2_1_Version, EachSuccessfulSetValueAddsOne) {
  using Make = CarrierUnderTest<TypeParam>;
  auto c = Make::from_values({I(0), I(0), I(0)}, DType::Int32());
  c->set_value(0, I(1));
  EXPECT_EQ(c->version(), 1u);
  c->set_value(2, I(2));
  EXPECT_EQ(c->version(), 2u);
  c->set_value(2, I(2));  // writing the same value is still a write
  EXPECT_EQ(c->version(), 3u);
  for (int k = 0; k < 10; ++k) c->set_value(1, I(k));
  EXPECT_EQ(c->version(), 13u);
  EXPECT_EQ(values_of(*c), (std::vector<Value>{I(1), I(9), I(2)}));
}

TYPED_TEST(CoreConcepts_2_1_Version, ReadsAddNothing) {
  using Make = CarrierUnderTest<TypeParam>;
  auto c = Make::from_values({F(1), F(2)}, DType::Float32());
  c->set_value(0, F(3));
  (void)c->get_value(0);
  (void)(*c)[1];
  (void)c->size();
  (void)values_of(*c);
  (void)c->supports_storage_dtype(DType::Int32());
  EXPECT_EQ(c->version(), 1u);
}

TYPED_TEST(CoreConcepts_2_1_Version, FailedWriteAddsNothing) {
  using Make = CarrierUnderTest<TypeParam>;
  auto c = Make::from_values({F(1), F(2)}, DType::Float32());
  c->set_value(1, F(4));
  const State before = state_of(*c);
  ASSERT_EQ(before.version, 1u);
  EXPECT_THROW_EXACTLY(c->set_value(-1, F(0)), sw::IndexError);
  EXPECT_THROW_EXACTLY(c->set_value(2, F(0)), sw::IndexError);
  EXPECT_THROW_EXACTLY(c->set_value(0, I(0)), sw::TypeError);
  EXPECT_THROW_EXACTLY(c->set_value(0, B(false)), sw::TypeError);
  EXPECT_EQ(state_of(*c), before);

  auto frozen = Make::from_values({F(1)}, DType::Float32(), /*mutable_=*/false);
  EXPECT_THROW_EXACTLY(frozen->set_value(0, F(2)), sw::RuntimeError);
  EXPECT_EQ(frozen->version(), 0u);
  EXPECT_EQ(frozen->get_value(0), F(1));

  c->release();
  EXPECT_THROW_EXACTLY(c->set_value(0, F(0)), sw::RuntimeError);
  EXPECT_EQ(c->version(), 1u);
}

TYPED_TEST(CoreConcepts_2_1_Version, ReleaseAddsNothing) {
  using Make = CarrierUnderTest<TypeParam>;
  auto c = Make::from_values({B(false)}, DType::Bool());
  c->set_value(0, B(true));
  c->set_value(0, B(false));
  c->release();
  EXPECT_EQ(c->version(), 2u);
  c->release();
  EXPECT_EQ(c->version(), 2u);
}

TYPED_TEST(CoreConcepts_2_1_Version, CountersArePerCarrier) {
  using Make = CarrierUnderTest<TypeParam>;
  auto a = Make::allocate(2, DType::Float32());
  auto b = a->allocate_like(2);
  a->set_value(0, F(1));
  a->set_value(1, F(1));
  b->set_value(0, F(1));
  EXPECT_EQ(a->version(), 2u);
  EXPECT_EQ(b->version(), 1u);
}

// ===========================================================================
// CPU-only behaviour (core-concepts.md 8.2: CPU "may wrap an external
// pointer"): CPU::wrap, the create defaults.

TEST(CoreConcepts_8_2_CPU, CreateDefaultsToMutableZeroedFloat32) {
  auto c = sw::CPU::create(3);
  EXPECT_EQ(&c->dtype(), &DType::Float32());
  EXPECT_TRUE(c->is_mutable());
  EXPECT_EQ(values_of(*c), (std::vector<Value>(3, F(0))));
  EXPECT_EQ(c->element_bytes(), sizeof(float));
  EXPECT_EQ(sw::CPU::create(1, DType::Int32())->element_bytes(), sizeof(std::int32_t));
  EXPECT_EQ(sw::CPU::create(1, DType::Bool())->element_bytes(), sizeof(bool));
}

TEST(CoreConcepts_8_2_CPU, CreateEmptyStorageIsWritable) {
  auto c = sw::CPU::create(4, DType::Float32(), true, /*empty=*/true);
  EXPECT_EQ(c->size(), 4);
  for (std::int64_t k = 0; k < 4; ++k) c->set_value(k, F(static_cast<float>(k) + 0.5f));
  EXPECT_EQ(values_of(*c), (std::vector<Value>{F(0.5f), F(1.5f), F(2.5f), F(3.5f)}));
  EXPECT_EQ(c->version(), 4u);
}

TEST(CoreConcepts_8_2_CPU, WrapSharesTheCallerBuffer) {
  alignas(64) float buffer[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  auto c = sw::CPU::wrap(buffer, 4);
  EXPECT_EQ(c->size(), 4);
  EXPECT_EQ(&c->dtype(), &DType::Float32());
  EXPECT_EQ(c->data<float>(), buffer);
  EXPECT_EQ(values_of(*c), (std::vector<Value>{F(1), F(2), F(3), F(4)}));
  EXPECT_EQ(c->version(), 0u);
  // A write through the carrier lands in the buffer...
  c->set_value(1, F(-9.5f));
  EXPECT_EQ(buffer[1], -9.5f);
  EXPECT_EQ(buffer[0], 1.0f);
  EXPECT_EQ(buffer[2], 3.0f);
  EXPECT_EQ(c->version(), 1u);
  // ...and a write to the buffer is seen by the carrier.
  buffer[3] = 42.0f;
  EXPECT_EQ(c->get_value(3), F(42));
}

TEST(CoreConcepts_8_2_CPU, WrapSharesInt32AndBoolBuffers) {
  std::int32_t ints[3] = {7, 8, 9};
  auto i = sw::CPU::wrap(ints, 3, DType::Int32());
  EXPECT_EQ(values_of(*i), (std::vector<Value>{I(7), I(8), I(9)}));
  i->set_value(2, I(-1));
  EXPECT_EQ(ints[2], -1);
  bool bools[2] = {true, false};
  auto b = sw::CPU::wrap(bools, 2, DType::Bool());
  EXPECT_EQ(values_of(*b), (std::vector<Value>{B(true), B(false)}));
  b->set_value(1, B(true));
  EXPECT_TRUE(bools[1]);
  // A sub-range of a buffer.
  auto tail = sw::CPU::wrap(ints + 1, 2, DType::Int32());
  tail->set_value(0, I(100));
  EXPECT_EQ(ints[1], 100);
  EXPECT_EQ(i->get_value(1), I(100));
}

TEST(CoreConcepts_8_2_CPU, ReleaseDoesNotFreeTheCallerBuffer) {
  // Heap memory the test owns and frees: under AddressSanitizer a free by the
  // carrier would be reported as a double free or a use after free.
  auto buffer = std::make_unique<float[]>(8);
  for (int k = 0; k < 8; ++k) buffer[static_cast<std::size_t>(k)] = static_cast<float>(k);
  {
    auto c = sw::CPU::wrap(buffer.get(), 8);
    c->set_value(7, F(70));
    c->release();
    EXPECT_TRUE(c->is_released());
    EXPECT_THROW_EXACTLY(c->get_value(0), sw::RuntimeError);
    c->release();
  }
  EXPECT_EQ(buffer[7], 70.0f);
  buffer[0] = 5.0f;  // still ours to write
  EXPECT_EQ(buffer[0], 5.0f);
  {
    // Destruction without release does not free it either.
    auto c = sw::CPU::wrap(buffer.get(), 8);
    EXPECT_EQ(c->get_value(0), F(5));
  }
  EXPECT_EQ(buffer[3], 3.0f);
}

TEST(CoreConcepts_8_2_CPU, WrapImmutableRefusesWritesAndLeavesTheBuffer) {
  float buffer[2] = {1.0f, 2.0f};
  auto c = sw::CPU::wrap(buffer, 2, DType::Float32(), /*mutable_=*/false);
  EXPECT_FALSE(c->is_mutable());
  EXPECT_THROW_EXACTLY(c->set_value(0, F(9)), sw::RuntimeError);
  EXPECT_EQ(buffer[0], 1.0f);
  EXPECT_EQ(c->version(), 0u);
}

TEST(CoreConcepts_8_2_CPU, WrapRejectsBadArgumentsWithValueError) {
  alignas(8) std::int32_t ints[4] = {1, 2, 3, 4};
  EXPECT_THROW_EXACTLY(sw::CPU::wrap(nullptr, 4), sw::ValueError);
  EXPECT_THROW_EXACTLY(sw::CPU::wrap(nullptr, 0, DType::Int32()), sw::ValueError);
  EXPECT_THROW_EXACTLY(sw::CPU::wrap(ints, -1, DType::Int32()), sw::ValueError);
  // Misaligned for a 4-byte dtype.
  void* misaligned = reinterpret_cast<char*>(ints) + 1;
  EXPECT_THROW_EXACTLY(sw::CPU::wrap(misaligned, 2, DType::Int32()), sw::ValueError);
  EXPECT_THROW_EXACTLY(sw::CPU::wrap(misaligned, 2, DType::Float32()), sw::ValueError);
  for (const DType* d : unsupported_dtypes()) {
    SCOPED_TRACE(d->name());
    EXPECT_THROW_EXACTLY(sw::CPU::wrap(ints, 4, *d), sw::ValueError);
  }
  EXPECT_EQ(ints[0], 1);
  EXPECT_EQ(ints[3], 4);
}

TEST(CoreConcepts_8_2_CPU, LikeOfAWrappedCarrierOwnsFreshStorage) {
  float buffer[3] = {1.0f, 2.0f, 3.0f};
  auto wrapped = sw::CPU::wrap(buffer, 3);
  auto fresh = wrapped->allocate_like(3);
  EXPECT_NE(std::static_pointer_cast<sw::CPU>(fresh)->data<float>(), buffer);
  fresh->set_value(0, F(11));
  EXPECT_EQ(buffer[0], 1.0f);
  const std::vector<Value> vs = {F(5), F(6), F(7)};
  auto copy = wrapped->new_like(vs);
  copy->set_value(2, F(8));
  EXPECT_EQ(buffer[2], 3.0f);
  wrapped->release();
  EXPECT_EQ(fresh->get_value(0), F(11));
  EXPECT_EQ(values_of(*copy), (std::vector<Value>{F(5), F(6), F(8)}));
}
