// Tests for include/strideweave/dtype.h and the dtype half of value.h
// (core-concepts.md section 5, "Dtype descriptors", plus the storage zeros of
// 1.3). Suites are named CoreConcepts_5_<n>_* after the requirement they
// check. The dtype registry is global and permanent, so every dtype a test
// registers has a fresh name starting with "test_core_dtype." (unique_name).
#include <strideweave/carriers/cpu.h>
#include <strideweave/carriers/generic.h>
#include <strideweave/dtype.h>
#include <strideweave/errors.h>
#include <strideweave/value.h>

#include <gtest/gtest.h>

#include <atomic>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "support/expect_exactly.h"

namespace sw = strideweave;
using sw::DType;
using sw::DTypeCategory;
using sw::ElementKind;
using sw::PlanarCompoundDType;
using sw::SimpleDType;

namespace {

// The built-ins as dtypes.def lists them (identity objects, list order).
std::vector<const DType*> builtins_in_list_order() {
  return {
#define SW_DTYPE_CATEGORY(ident, name, super) &DType::ident(),
#define SW_DTYPE_SIMPLE(ident, name, bits, super, kind) &DType::ident(),
#include <strideweave/dtypes.def>
  };
}

// The built-in names as written in dtypes.def.
std::vector<std::string> builtin_names_in_list_order() {
  return {
#define SW_DTYPE_CATEGORY(ident, name, super) name,
#define SW_DTYPE_SIMPLE(ident, name, bits, super, kind) name,
#include <strideweave/dtypes.def>
  };
}

// The Python-style name of the strideweave error `fn` throws ("" if none).
template <class Fn>
std::string thrown_type(Fn&& fn) {
  try {
    fn();
  } catch (const sw::Error& e) {
    return e.type_name();
  }
  return "";
}

// A name no other registration uses, even when the tests run repeatedly in
// one process (--gtest_repeat): the registry is permanent.
std::string unique_name(const std::string& suffix) {
  static std::atomic<int> counter{0};
  return "test_core_dtype." + suffix + "." + std::to_string(counter.fetch_add(1));
}

}  // namespace

// ---------------------------------------------------------------------------
// 5.1 Identity, registration, immutability

static_assert(!std::is_copy_constructible_v<DType>);
static_assert(!std::is_copy_assignable_v<DType>);
static_assert(!std::is_copy_constructible_v<SimpleDType>);
static_assert(!std::is_copy_constructible_v<DTypeCategory>);
static_assert(!std::is_copy_constructible_v<sw::CompoundDType>);
static_assert(!std::is_copy_constructible_v<PlanarCompoundDType>);
static_assert(!std::is_move_constructible_v<SimpleDType>);

TEST(CoreConcepts_5_1_DType, DescriptorsAreNotCopyable) {
  // The static_asserts above are the real check; this test names it.
  EXPECT_FALSE(std::is_copy_constructible_v<DType>);
  EXPECT_FALSE(std::is_copy_assignable_v<SimpleDType>);
}

TEST(CoreConcepts_5_1_DType, EqualityIsIdentity) {
  EXPECT_TRUE(DType::Float32() == DType::Float32());
  EXPECT_EQ(&DType::Float32(), &DType::Float32());
  EXPECT_FALSE(DType::Float32() == DType::Float64());
  EXPECT_FALSE(DType::Float32() == DType::Int32());
  EXPECT_FALSE(DType::Any() == DType::Floating());
  // Two extension descriptors that look alike (same bits, same supertype) are
  // still different identities.
  const SimpleDType& a = SimpleDType::create(unique_name("lookalike_a"), 32, DType::Floating());
  const SimpleDType& b = SimpleDType::create(unique_name("lookalike_b"), 32, DType::Floating());
  EXPECT_FALSE(a == b);
  EXPECT_FALSE(a == DType::Float32());
  EXPECT_TRUE(a == a);
}

TEST(CoreConcepts_5_1_DType, ReferencesToOneDescriptorAreTheSameObject) {
  const DType& by_name = DType::from_name("float32");
  const DType& by_accessor = DType::Float32();
  EXPECT_EQ(&by_name, &by_accessor);
  EXPECT_TRUE(by_name == by_accessor);
}

TEST(CoreConcepts_5_1_DType, RegisteringACategoryPublishesItOnce) {
  const auto before = DType::registered();
  const std::string name = unique_name("category");
  const DTypeCategory& c = DTypeCategory::create(name, &DType::Floating());
  const auto after = DType::registered();
  ASSERT_EQ(after.size(), before.size() + 1);
  EXPECT_EQ(after.back(), &c);
  EXPECT_EQ(&DType::from_name(name), &c);
  EXPECT_EQ(c.name(), name);
  EXPECT_TRUE(c.is_category());
  EXPECT_FALSE(c.is_simple());
  EXPECT_FALSE(c.is_compound());
  EXPECT_EQ(c.supertype(), &DType::Floating());
  EXPECT_EQ(c.bits(), std::nullopt);
}

TEST(CoreConcepts_5_1_DType, RegisteringARootCategoryHasNoSupertype) {
  const DTypeCategory& c = DTypeCategory::create(unique_name("root_category"));
  EXPECT_EQ(c.supertype(), nullptr);
  EXPECT_TRUE(c.supertypes().empty());
  EXPECT_FALSE(c.is_subtype_of(DType::Any()));
}

TEST(CoreConcepts_5_1_DType, RegisteringASimpleDTypePublishesItOnce) {
  const auto before = DType::registered();
  const std::string name = unique_name("simple12");
  const SimpleDType& s = SimpleDType::create(name, 12, DType::Integer());
  const auto after = DType::registered();
  ASSERT_EQ(after.size(), before.size() + 1);
  EXPECT_EQ(after.back(), &s);
  EXPECT_EQ(&DType::from_name(name), &s);
  EXPECT_EQ(s.name(), name);
  EXPECT_TRUE(s.is_simple());
  EXPECT_FALSE(s.is_category());
  EXPECT_FALSE(s.is_compound());
  EXPECT_EQ(s.bits(), std::optional<int>(12));
  EXPECT_EQ(s.supertype(), &DType::Integer());
  EXPECT_TRUE(s.is_subtype_of(DType::Any()));
  // Registered but never implemented.
  EXPECT_EQ(s.element_kind(), std::nullopt);
}

TEST(CoreConcepts_5_1_DType, RegisteringASimpleDTypeUnderAnExtensionCategory) {
  const DTypeCategory& c = DTypeCategory::create(unique_name("ext_category"), &DType::Any());
  const SimpleDType& s = SimpleDType::create(unique_name("ext_simple"), 16, c);
  EXPECT_EQ(s.supertypes(), (std::vector<const DType*>{&c, &DType::Any()}));
  EXPECT_TRUE(s.is_subtype_of(c));
  EXPECT_FALSE(s.is_subtype_of(DType::Floating()));
}

TEST(CoreConcepts_5_1_DType, DuplicateNameRaisesValueErrorAndRegistersNothing) {
  const auto before = DType::registered();
  EXPECT_THROW_EXACTLY(SimpleDType::create("float32", 32, DType::Floating()), sw::ValueError);
  EXPECT_THROW_EXACTLY(DTypeCategory::create("floating", &DType::Any()), sw::ValueError);
  EXPECT_THROW_EXACTLY(DTypeCategory::create("int32"), sw::ValueError);
  EXPECT_THROW_EXACTLY(PlanarCompoundDType::create("bool", {&DType::Float32()}), sw::ValueError);
  EXPECT_EQ(DType::registered(), before);
  // The original owner of the name is untouched.
  EXPECT_EQ(&DType::from_name("float32"), &DType::Float32());
  EXPECT_EQ(&DType::from_name("floating"), &DType::Floating());
  EXPECT_EQ(&DType::from_name("bool"), &DType::Bool());
}

TEST(CoreConcepts_5_1_DType, DuplicateExtensionNameRaisesValueErrorAndRegistersNothing) {
  const std::string name = unique_name("dup");
  const SimpleDType& first = SimpleDType::create(name, 8, DType::Floating());
  const auto before = DType::registered();
  EXPECT_THROW_EXACTLY(SimpleDType::create(name, 8, DType::Floating()), sw::ValueError);
  EXPECT_THROW_EXACTLY(DTypeCategory::create(name), sw::ValueError);
  EXPECT_THROW_EXACTLY(PlanarCompoundDType::create(name, {&DType::Float32()}), sw::ValueError);
  EXPECT_EQ(DType::registered(), before);
  EXPECT_EQ(&DType::from_name(name), &first);
}

TEST(CoreConcepts_5_1_DType, EmptyNameRaisesValueErrorAndRegistersNothing) {
  const auto before = DType::registered();
  EXPECT_THROW_EXACTLY(SimpleDType::create("", 8, DType::Floating()), sw::ValueError);
  EXPECT_THROW_EXACTLY(DTypeCategory::create(""), sw::ValueError);
  EXPECT_THROW_EXACTLY(PlanarCompoundDType::create("", {&DType::Float32()}), sw::ValueError);
  EXPECT_EQ(DType::registered(), before);
  EXPECT_THROW_EXACTLY(DType::from_name(""), sw::LookupError);
}

TEST(CoreConcepts_5_1_DType, NonPositiveBitsRaiseValueErrorAndRegisterNothing) {
  const auto before = DType::registered();
  const std::string zero = unique_name("bits_zero");
  const std::string negative = unique_name("bits_negative");
  EXPECT_THROW_EXACTLY(SimpleDType::create(zero, 0, DType::Floating()), sw::ValueError);
  EXPECT_THROW_EXACTLY(SimpleDType::create(negative, -8, DType::Floating()), sw::ValueError);
  EXPECT_EQ(DType::registered(), before);
  EXPECT_THROW_EXACTLY(DType::from_name(zero), sw::LookupError);
  EXPECT_THROW_EXACTLY(DType::from_name(negative), sw::LookupError);
  // The names stay free: a later valid registration succeeds.
  EXPECT_EQ(SimpleDType::create(zero, 2, DType::Floating()).bits(), std::optional<int>(2));
}

TEST(CoreConcepts_5_1_DType, NonCategorySupertypeRaisesValueErrorAndRegistersNothing) {
  const auto before = DType::registered();
  const std::string simple = unique_name("under_simple");
  const std::string category = unique_name("category_under_simple");
  const std::string compound = unique_name("compound_under_simple");
  EXPECT_THROW_EXACTLY(SimpleDType::create(simple, 8, DType::Float32()), sw::ValueError);
  EXPECT_THROW_EXACTLY(DTypeCategory::create(category, &DType::Int32()), sw::ValueError);
  EXPECT_THROW_EXACTLY(PlanarCompoundDType::create(compound, {&DType::Float32()}, {}, &DType::Bool()), sw::ValueError);
  EXPECT_EQ(DType::registered(), before);
  EXPECT_THROW_EXACTLY(DType::from_name(simple), sw::LookupError);
  EXPECT_THROW_EXACTLY(DType::from_name(category), sw::LookupError);
  EXPECT_THROW_EXACTLY(DType::from_name(compound), sw::LookupError);
}

TEST(CoreConcepts_5_1_DType, ConcurrentRegistrationOfOneNameSucceedsExactlyOnce) {
  const std::string name = unique_name("raced");
  const auto before = DType::registered();
  std::atomic<int> successes{0};
  std::atomic<int> value_errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      try {
        SimpleDType::create(name, 8, DType::Floating());
        successes.fetch_add(1);
      } catch (const sw::ValueError& e) {
        if (typeid(e) == typeid(sw::ValueError)) value_errors.fetch_add(1);  // exactly ValueError
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(successes.load(), 1);
  EXPECT_EQ(value_errors.load(), 7);
  EXPECT_EQ(DType::registered().size(), before.size() + 1);
  EXPECT_EQ(DType::from_name(name).name(), name);
}

// ---------------------------------------------------------------------------
// 5.2 Queries and lookups

TEST(CoreConcepts_5_2_DType, FromNameFindsEveryBuiltin) {
  const auto builtins = builtins_in_list_order();
  const auto names = builtin_names_in_list_order();
  ASSERT_EQ(builtins.size(), names.size());
  for (std::size_t i = 0; i < builtins.size(); ++i) {
    SCOPED_TRACE(names[i]);
    EXPECT_EQ(&DType::from_name(names[i]), builtins[i]);
    EXPECT_EQ(builtins[i]->name(), names[i]);
  }
}

TEST(CoreConcepts_5_2_DType, BuiltinNamesAreLowerCase) {
  EXPECT_EQ(builtin_names_in_list_order(),
            (std::vector<std::string>{"any", "floating", "integer", "bool", "int32", "int8", "float32", "float64",
                                      "e8m0", "e5m2", "e4m3", "e3m2", "e2m3", "e2m1"}));
  EXPECT_EQ(DType::Float32().name(), "float32");
  EXPECT_EQ(DType::E4M3().name(), "e4m3");
  EXPECT_EQ(DType::Any().name(), "any");
}

TEST(CoreConcepts_5_2_DType, FromNameOfAnUnknownNameRaisesLookupError) {
  EXPECT_THROW_EXACTLY(DType::from_name("no_such_dtype"), sw::LookupError);
  EXPECT_THROW_EXACTLY(DType::from_name("Float32"), sw::LookupError);  // names are exact, lower-case
  EXPECT_THROW_EXACTLY(DType::from_name("float32 "), sw::LookupError);
  // A LookupError proper, not its IndexError subclass.
  EXPECT_EQ(thrown_type([] { DType::from_name("no_such_dtype"); }), "LookupError");
}

TEST(CoreConcepts_5_2_DType, IndexErrorDerivesFromLookupError) {
  static_assert(std::is_base_of_v<sw::LookupError, sw::IndexError>);
  static_assert(std::is_base_of_v<sw::Error, sw::LookupError>);
  EXPECT_THROW(throw sw::IndexError("x"), sw::LookupError);  // a base-class catch on purpose
  EXPECT_STREQ(sw::IndexError("x").type_name(), "IndexError");
  EXPECT_STREQ(sw::LookupError("x").type_name(), "LookupError");
}

TEST(CoreConcepts_5_2_DType, RegisteredStartsWithTheBuiltinsInListOrder) {
  const auto builtins = builtins_in_list_order();
  const auto all = DType::registered();
  ASSERT_GE(all.size(), builtins.size());
  for (std::size_t i = 0; i < builtins.size(); ++i) EXPECT_EQ(all[i], builtins[i]) << "position " << i;
  EXPECT_EQ(all[0]->name(), "any");
  EXPECT_EQ(all[6]->name(), "float32");
  EXPECT_EQ(all[13]->name(), "e2m1");
}

TEST(CoreConcepts_5_2_DType, KindPredicatesOfTheBuiltins) {
  for (const DType* d : {static_cast<const DType*>(&DType::Any()), static_cast<const DType*>(&DType::Floating()),
                         static_cast<const DType*>(&DType::Integer())}) {
    SCOPED_TRACE(d->name());
    EXPECT_TRUE(d->is_category());
    EXPECT_FALSE(d->is_simple());
    EXPECT_FALSE(d->is_compound());
  }
  const auto builtins = builtins_in_list_order();
  for (std::size_t i = 3; i < builtins.size(); ++i) {
    SCOPED_TRACE(builtins[i]->name());
    EXPECT_TRUE(builtins[i]->is_simple());
    EXPECT_FALSE(builtins[i]->is_category());
    EXPECT_FALSE(builtins[i]->is_compound());
  }
}

TEST(CoreConcepts_5_2_DType, SupertypeChainsNearestFirst) {
  using Chain = std::vector<const DType*>;
  EXPECT_EQ(DType::Float32().supertypes(), (Chain{&DType::Floating(), &DType::Any()}));
  EXPECT_EQ(DType::E2M1().supertypes(), (Chain{&DType::Floating(), &DType::Any()}));
  EXPECT_EQ(DType::Int32().supertypes(), (Chain{&DType::Integer(), &DType::Any()}));
  EXPECT_EQ(DType::Int8().supertypes(), (Chain{&DType::Integer(), &DType::Any()}));
  EXPECT_EQ(DType::Bool().supertypes(), (Chain{&DType::Any()}));
  EXPECT_EQ(DType::Floating().supertypes(), (Chain{&DType::Any()}));
  EXPECT_EQ(DType::Any().supertypes(), Chain{});
  EXPECT_EQ(DType::Float32().supertype(), &DType::Floating());
  EXPECT_EQ(DType::Floating().supertype(), &DType::Any());
  EXPECT_EQ(DType::Bool().supertype(), &DType::Any());
  EXPECT_EQ(DType::Any().supertype(), nullptr);
}

TEST(CoreConcepts_5_2_DType, IsSubtypeOfFollowsTheChainAndIsReflexive) {
  EXPECT_TRUE(DType::Float32().is_subtype_of(DType::Float32()));
  EXPECT_TRUE(DType::Float32().is_subtype_of(DType::Floating()));
  EXPECT_TRUE(DType::Float32().is_subtype_of(DType::Any()));
  EXPECT_FALSE(DType::Float32().is_subtype_of(DType::Integer()));
  EXPECT_FALSE(DType::Float32().is_subtype_of(DType::Float64()));
  EXPECT_TRUE(DType::Int32().is_subtype_of(DType::Integer()));
  EXPECT_FALSE(DType::Int32().is_subtype_of(DType::Floating()));
  EXPECT_TRUE(DType::Bool().is_subtype_of(DType::Any()));
  EXPECT_FALSE(DType::Bool().is_subtype_of(DType::Integer()));
  EXPECT_FALSE(DType::Bool().is_subtype_of(DType::Floating()));
  EXPECT_TRUE(DType::Floating().is_subtype_of(DType::Any()));
  EXPECT_FALSE(DType::Any().is_subtype_of(DType::Floating()));
  EXPECT_FALSE(DType::Floating().is_subtype_of(DType::Float32()));
  EXPECT_TRUE(DType::Any().is_subtype_of(DType::Any()));
}

// ---------------------------------------------------------------------------
// 5.3 Built-ins

TEST(CoreConcepts_5_3_DType, BitsOfEachBuiltin) {
  EXPECT_EQ(DType::Bool().bits(), std::optional<int>(8));
  EXPECT_EQ(DType::Int32().bits(), std::optional<int>(32));
  EXPECT_EQ(DType::Int8().bits(), std::optional<int>(8));
  EXPECT_EQ(DType::Float32().bits(), std::optional<int>(32));
  EXPECT_EQ(DType::Float64().bits(), std::optional<int>(64));
  EXPECT_EQ(DType::E8M0().bits(), std::optional<int>(8));
  EXPECT_EQ(DType::E5M2().bits(), std::optional<int>(8));
  EXPECT_EQ(DType::E4M3().bits(), std::optional<int>(8));
  EXPECT_EQ(DType::E3M2().bits(), std::optional<int>(6));
  EXPECT_EQ(DType::E2M3().bits(), std::optional<int>(6));
  EXPECT_EQ(DType::E2M1().bits(), std::optional<int>(4));
}

TEST(CoreConcepts_5_3_DType, CategoriesHaveNoBits) {
  EXPECT_EQ(DType::Any().bits(), std::nullopt);
  EXPECT_EQ(DType::Floating().bits(), std::nullopt);
  EXPECT_EQ(DType::Integer().bits(), std::nullopt);
}

TEST(CoreConcepts_5_3_DType, SupertypesOfEachBuiltin) {
  EXPECT_EQ(DType::Bool().supertype(), &DType::Any());
  EXPECT_EQ(DType::Int32().supertype(), &DType::Integer());
  EXPECT_EQ(DType::Int8().supertype(), &DType::Integer());
  for (const SimpleDType* d : {&DType::Float32(), &DType::Float64(), &DType::E8M0(), &DType::E5M2(), &DType::E4M3(),
                               &DType::E3M2(), &DType::E2M3(), &DType::E2M1()}) {
    SCOPED_TRACE(d->name());
    EXPECT_EQ(d->supertype(), &DType::Floating());
  }
  EXPECT_EQ(DType::Integer().supertype(), &DType::Any());
}

TEST(CoreConcepts_5_3_DType, ElementKindOnlyForStoredDtypesAndFloat64) {
  EXPECT_EQ(DType::Bool().element_kind(), std::optional(ElementKind::Bool));
  EXPECT_EQ(DType::Int32().element_kind(), std::optional(ElementKind::Int32));
  EXPECT_EQ(DType::Float32().element_kind(), std::optional(ElementKind::Float32));
  EXPECT_EQ(DType::Float64().element_kind(), std::optional(ElementKind::Float64));
  for (const SimpleDType* d : {&DType::Int8(), &DType::E8M0(), &DType::E5M2(), &DType::E4M3(), &DType::E3M2(),
                               &DType::E2M3(), &DType::E2M1()}) {
    SCOPED_TRACE(d->name());
    EXPECT_EQ(d->element_kind(), std::nullopt);
  }
}

TEST(CoreConcepts_5_3_DType, StoredElementKindOnlyForFloat32Int32Bool) {
  EXPECT_EQ(sw::stored_element_kind(DType::Float32()), std::optional(ElementKind::Float32));
  EXPECT_EQ(sw::stored_element_kind(DType::Int32()), std::optional(ElementKind::Int32));
  EXPECT_EQ(sw::stored_element_kind(DType::Bool()), std::optional(ElementKind::Bool));
  EXPECT_EQ(sw::stored_element_kind(DType::Float64()), std::nullopt);
  EXPECT_EQ(sw::stored_element_kind(DType::Int8()), std::nullopt);
  EXPECT_EQ(sw::stored_element_kind(DType::Floating()), std::nullopt);
  EXPECT_EQ(&sw::dtype_of(ElementKind::Float32), &DType::Float32());
  EXPECT_EQ(&sw::dtype_of(ElementKind::Int32), &DType::Int32());
  EXPECT_EQ(&sw::dtype_of(ElementKind::Bool), &DType::Bool());
  EXPECT_STREQ(sw::element_kind_name(ElementKind::Float32), "float32");
  EXPECT_STREQ(sw::element_kind_name(ElementKind::Int32), "int32");
  EXPECT_STREQ(sw::element_kind_name(ElementKind::Bool), "bool");
  EXPECT_STREQ(sw::element_kind_name(ElementKind::Float64), "float64");
}

// 1.3 "Initialized zero: 0.0, 0, False (storage_zero(dtype); None otherwise)".
TEST(CoreConcepts_1_3_StorageZero, ZeroOfEachStoredDtype) {
  const auto f = sw::storage_zero(DType::Float32());
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(*f, sw::Value::from_float32(0.0f));
  EXPECT_NE(*f, sw::Value::from_float32(-0.0f));  // +0.0 exactly (bitwise comparison)
  const auto i = sw::storage_zero(DType::Int32());
  ASSERT_TRUE(i.has_value());
  EXPECT_EQ(*i, sw::Value::from_int32(0));
  const auto b = sw::storage_zero(DType::Bool());
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(*b, sw::Value::from_bool(false));
}

TEST(CoreConcepts_1_3_StorageZero, NulloptForEveryDtypeThatIsNeverStored) {
  for (const DType* d : builtins_in_list_order()) {
    SCOPED_TRACE(d->name());
    const bool stored = d == &DType::Float32() || d == &DType::Int32() || d == &DType::Bool();
    EXPECT_EQ(sw::storage_zero(*d).has_value(), stored);
  }
  const SimpleDType& ext = SimpleDType::create(unique_name("never_stored"), 32, DType::Floating());
  EXPECT_EQ(sw::storage_zero(ext), std::nullopt);
  const PlanarCompoundDType& compound =
      PlanarCompoundDType::create(unique_name("zero_compound"), {&DType::Float32(), &DType::Float32()});
  EXPECT_EQ(sw::storage_zero(compound), std::nullopt);
}

// ---------------------------------------------------------------------------
// 5.4 Compound dtypes

TEST(CoreConcepts_5_4_CompoundDType, PlanesAndRulesAreKeptInOrder) {
  const auto before = DType::registered();
  const std::string name = unique_name("planar");
  const PlanarCompoundDType& c = PlanarCompoundDType::create(
      name, {&DType::Int8(), &DType::Float32(), &DType::Int8()}, {"scale-per-block", "planes-adjacent"},
      &DType::Floating());
  ASSERT_EQ(DType::registered().size(), before.size() + 1);
  EXPECT_EQ(DType::registered().back(), &c);
  EXPECT_EQ(&DType::from_name(name), &c);
  EXPECT_TRUE(c.is_compound());
  EXPECT_FALSE(c.is_simple());
  EXPECT_FALSE(c.is_category());
  EXPECT_EQ(c.num_carriers(), 3u);
  ASSERT_EQ(c.simple_types().size(), 3u);
  EXPECT_EQ(c.simple_types()[0], &DType::Int8());
  EXPECT_EQ(c.simple_types()[1], &DType::Float32());
  EXPECT_EQ(c.simple_types()[2], &DType::Int8());
  ASSERT_EQ(c.representation_rules().size(), 2u);
  EXPECT_EQ(c.representation_rules()[0], "scale-per-block");
  EXPECT_EQ(c.representation_rules()[1], "planes-adjacent");
  EXPECT_EQ(c.supertype(), &DType::Floating());
  EXPECT_TRUE(c.is_subtype_of(DType::Any()));
  EXPECT_EQ(c.bits(), std::nullopt);
}

TEST(CoreConcepts_5_4_CompoundDType, DefaultsToNoRulesAndNoSupertype) {
  const PlanarCompoundDType& c = PlanarCompoundDType::create(unique_name("planar_defaults"), {&DType::Int32()});
  EXPECT_EQ(c.num_carriers(), 1u);
  EXPECT_TRUE(c.representation_rules().empty());
  EXPECT_EQ(c.supertype(), nullptr);
  EXPECT_TRUE(c.supertypes().empty());
}

TEST(CoreConcepts_5_4_CompoundDType, EmptyPlanesRaiseValueErrorAndRegisterNothing) {
  const auto before = DType::registered();
  const std::string name = unique_name("no_planes");
  EXPECT_THROW_EXACTLY(PlanarCompoundDType::create(name, {}), sw::ValueError);
  EXPECT_EQ(DType::registered(), before);
  EXPECT_THROW_EXACTLY(DType::from_name(name), sw::LookupError);
}

TEST(CoreConcepts_5_4_CompoundDType, NullPlaneRaisesTypeErrorAndRegistersNothing) {
  const auto before = DType::registered();
  const std::string name = unique_name("null_plane");
  EXPECT_THROW_EXACTLY(PlanarCompoundDType::create(name, {&DType::Float32(), nullptr}), sw::TypeError);
  EXPECT_EQ(DType::registered(), before);
  EXPECT_THROW_EXACTLY(DType::from_name(name), sw::LookupError);
}

TEST(CoreConcepts_5_4_CompoundDType, NeverAHomogeneousStorageDtype) {
  const PlanarCompoundDType& c = PlanarCompoundDType::create(unique_name("not_storage"), {&DType::Float32()});
  EXPECT_FALSE(sw::Generic::supports(c));
  EXPECT_FALSE(sw::CPU::supports(c));
  EXPECT_EQ(sw::stored_element_kind(c), std::nullopt);
}
