// Tests for include/strideweave/tensor.h and factory.h: core-concepts.md
// section 4 (Tensor versus carrier), the Tensor side of 2.1 (writes through a
// Tensor are versioned carrier writes) and 6.1's differentiability rule.
// Suites are named CoreConcepts_<section>_* after the requirement they check.
//
// Logical order is first mode fastest: make_tensor<C>({1,2,3,4,5,6},
// Shape{2,3}) puts values[i + 2*j] at (i, j), i.e.
//   (0,0)=1 (1,0)=2 (0,1)=3 (1,1)=4 (0,2)=5 (1,2)=6.
//
// "Bad input leaves everything unchanged": after each failing call the
// carrier's values and version, and the tensor's offset and layout, are
// checked to be exactly as before.
#include <strideweave/carrier.h>
#include <strideweave/carriers/cpu.h>
#include <strideweave/carriers/generic.h>
#include <strideweave/dtype.h>
#include <strideweave/errors.h>
#include <strideweave/factory.h>
#include <strideweave/layout.h>
#include <strideweave/tensor.h>
#include <strideweave/value.h>

#include <gtest/gtest.h>

#include "support/shipped_types.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "support/expect_exactly.h"

namespace sw = strideweave;
using sw::Carrier;
using sw::DType;
using sw::Layout;
using sw::Shape;
using sw::Stride;
using sw::Tensor;
using sw::TypedTensor;
using sw::Value;

namespace {

Value F(float v) { return Value::from_float32(v); }
Value I(std::int32_t v) { return Value::from_int32(v); }
Value B(bool v) { return Value::from_bool(v); }

std::vector<Value> ints(std::initializer_list<std::int32_t> vs) {
  std::vector<Value> out;
  for (std::int32_t v : vs) out.push_back(I(v));
  return out;
}

std::vector<Value> slots_of(const Carrier& c) {
  std::vector<Value> out;
  for (std::int64_t i = 0; i < c.size(); ++i) out.push_back(c.get_value(i));
  return out;
}

// Everything observable about a tensor and its (live) carrier.
struct State {
  std::vector<Value> slots;
  std::uint64_t version;
  std::int64_t offset;
  std::string layout;
  friend bool operator==(const State&, const State&) = default;
  friend std::ostream& operator<<(std::ostream& os, const State& s) {
    os << "{version=" << s.version << ", offset=" << s.offset << ", layout=" << s.layout << ", slots=[";
    for (const Value& v : s.slots) os << v.to_string() << ",";
    return os << "]}";
  }
};

State state_of(const Tensor& t) {
  return {slots_of(*t.carrier()), t.carrier()->version(), t.offset(), t.layout().to_string()};
}

void set_at(Tensor& t, std::vector<std::int64_t> coordinate, const Value& v) { t.set(coordinate, v); }

// The 2x3 Int32 example of the header comment, on carrier class C.
template <class C>
Tensor example_2x3() {
  return sw::make_tensor<C>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
}

// A carrier on the open base whose dtype is a SimpleDType that is never
// stored (the shipped carriers refuse such dtypes at construction, so this is
// the only way to reach Tensor's own check).
class UnstoredProbe final : public Carrier {
 public:
  explicit UnstoredProbe(const sw::SimpleDType& dtype) : Carrier(dtype, true) {}
  bool supports_storage_dtype(const DType&) const noexcept override { return false; }

 protected:
  std::int64_t storage_size() const noexcept override { return 4; }
  Value read_slot(std::int64_t) const override { return F(0); }
  void write_slot(std::int64_t, const Value&) override {}
  void release_storage() noexcept override {}
  std::shared_ptr<Carrier> make_like(std::int64_t, bool, const sw::SimpleDType&, bool) const override {
    return nullptr;
  }
};

using ShippedCarriers = sw_support::ShippedCarrierTypes;  // every shipped carrier (tests/support/shipped_types.h)

}  // namespace

// ---------------------------------------------------------------------------
// Compile-time guarantees.

// 4.1 "integer offset (else TypeError)": the offset is std::int64_t.
static_assert(std::is_constructible_v<Tensor, std::shared_ptr<Carrier>, std::int64_t, Layout>);
static_assert(!std::is_constructible_v<Tensor, std::shared_ptr<Carrier>, std::string, Layout>);
static_assert(!std::is_constructible_v<Tensor, std::shared_ptr<Carrier>, const char*, Layout>);
// The typed face cannot be built implicitly (construction checks the dtype).
static_assert(!std::is_convertible_v<Tensor, TypedTensor<float>>);
static_assert(std::is_constructible_v<TypedTensor<float>, Tensor>);
// The typed face converts to the erased face without a copy.
static_assert(std::is_convertible_v<const TypedTensor<float>&, const Tensor&>);

// ===========================================================================
// 4.1 Construction and validation.

TEST(CoreConcepts_4_1_Tensor, NullCarrierRaisesTypeError) {
  EXPECT_THROW_EXACTLY(Tensor(nullptr, 0, Layout::compact(Shape{2})), sw::TypeError);
  EXPECT_THROW_EXACTLY(Tensor(std::shared_ptr<Carrier>{}, Shape{1}), sw::TypeError);
}

TEST(CoreConcepts_4_1_Tensor, NegativeOffsetRaisesValueError) {
  auto c = sw::CPU::from_values(ints({1, 2, 3}), DType::Int32());
  EXPECT_THROW_EXACTLY(Tensor(c, -1, Layout::compact(Shape{2})), sw::ValueError);
  EXPECT_THROW_EXACTLY(Tensor(c, std::numeric_limits<std::int64_t>::min(), Layout::compact(Shape{1})), sw::ValueError);
  EXPECT_EQ(slots_of(*c), ints({1, 2, 3}));
  EXPECT_EQ(c->version(), 0u);
}

TEST(CoreConcepts_4_1_Tensor, OffsetPlusCosizeBeyondTheCarrierRaisesValueError) {
  auto c = sw::Generic::create(ints({1, 2, 3, 4, 5, 6}), DType::Int32());
  // Exactly fitting is fine.
  EXPECT_NO_THROW(Tensor(c, 0, Layout::compact(Shape{2, 3})));
  EXPECT_NO_THROW(Tensor(c, 2, Layout::compact(Shape{4})));
  EXPECT_NO_THROW(Tensor(c, 1, Layout(Shape{2, 2}, Stride{3, 1})));  // cosize 5
  // One slot too many.
  EXPECT_THROW_EXACTLY(Tensor(c, 1, Layout::compact(Shape{2, 3})), sw::ValueError);
  EXPECT_THROW_EXACTLY(Tensor(c, 3, Layout::compact(Shape{4})), sw::ValueError);
  EXPECT_THROW_EXACTLY(Tensor(c, 2, Layout(Shape{2, 2}, Stride{3, 1})), sw::ValueError);
  EXPECT_THROW_EXACTLY(Tensor(c, 0, Layout::compact(Shape{7})), sw::ValueError);
  EXPECT_THROW_EXACTLY(Tensor(c, 6, Layout::compact(Shape{1})), sw::ValueError);
  EXPECT_THROW_EXACTLY(Tensor(c, Shape{2, 4}), sw::ValueError);
  // offset + cosize overflowing int64 is a ValueError, not a wrap-around.
  EXPECT_THROW_EXACTLY(Tensor(c, std::numeric_limits<std::int64_t>::max(), Layout::compact(Shape{2})), sw::ValueError);
  EXPECT_EQ(slots_of(*c), ints({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(c->version(), 0u);
}

TEST(CoreConcepts_4_1_Tensor, CompactTensorOverAWholeCarrierNeedsMatchingSize) {
  // tensor.h: Tensor(carrier, shape) is "a compact tensor over the whole of
  // carrier (size must equal shape size)".
  auto c = sw::CPU::from_values(ints({1, 2, 3, 4}), DType::Int32());
  EXPECT_THROW_EXACTLY(Tensor(c, Shape{3}), sw::ValueError);
  EXPECT_THROW_EXACTLY(Tensor(c, Shape{5}), sw::ValueError);
  const Tensor t(c, Shape{2, 2});
  EXPECT_EQ(t.offset(), 0);
  EXPECT_EQ(t.layout(), Layout::compact(Shape{2, 2}));
  EXPECT_EQ(slots_of(*c), ints({1, 2, 3, 4}));
}

TEST(CoreConcepts_4_1_Tensor, ReleasedCarrierRaisesRuntimeError) {
  auto c = sw::CPU::from_values(ints({1, 2}), DType::Int32());
  c->release();
  EXPECT_THROW_EXACTLY(Tensor(c, 0, Layout::compact(Shape{2})), sw::RuntimeError);
  EXPECT_THROW_EXACTLY(Tensor(c, Shape{2}), sw::RuntimeError);
  EXPECT_EQ(c->version(), 0u);
}

TEST(CoreConcepts_4_1_Tensor, UnstoredCarrierDtypeRaisesValueError) {
  auto c = std::make_shared<UnstoredProbe>(DType::Float64());
  EXPECT_THROW_EXACTLY(Tensor(c, 0, Layout::compact(Shape{2})), sw::ValueError);
  auto e = std::make_shared<UnstoredProbe>(DType::E4M3());
  EXPECT_THROW_EXACTLY(Tensor(e, Shape{4}), sw::ValueError);
}

TEST(CoreConcepts_4_1_Tensor, LayoutIndicesAreAddedToTheOffset) {
  auto c = sw::CPU::from_values(ints({1, 2, 3, 4, 5, 6}), DType::Int32());
  // index(i, j) = 1 + 3*i + j
  const Tensor t(c, 1, Layout(Shape{2, 2}, Stride{3, 1}));
  EXPECT_EQ(t.at({0, 0}), I(2));
  EXPECT_EQ(t.at({1, 0}), I(5));
  EXPECT_EQ(t.at({0, 1}), I(3));
  EXPECT_EQ(t.at({1, 1}), I(6));
  EXPECT_EQ(t.values(), ints({2, 5, 3, 6}));
  EXPECT_EQ(t.at_ordinal(1), I(5));
  // A nested mode: ((2,2)):((1,4)) over offset 0 reads slots 0,1,4,5.
  const Tensor n(c, 0, Layout(Shape{sw::IntTuple{2, 2}}, Stride{sw::IntTuple{1, 4}}));
  EXPECT_EQ(n.size(), 4);
  EXPECT_EQ(n.values(), ints({1, 2, 5, 6}));
  EXPECT_EQ(n.at({2}), I(5));
}

TEST(CoreConcepts_4_1_Tensor, EmptyTensorOverEmptyCarrier) {
  auto c = sw::CPU::create(0, DType::Float32());
  const Tensor t(c, Shape{0, 3});
  EXPECT_EQ(t.size(), 0);
  EXPECT_TRUE(t.values().empty());
}

TEST(CoreConcepts_4_1_Tensor, MakeTensorStoresValuesFirstModeFastest) {
  const Tensor t = example_2x3<sw::CPU>();
  EXPECT_EQ(t.at({0, 0}), I(1));
  EXPECT_EQ(t.at({1, 0}), I(2));
  EXPECT_EQ(t.at({0, 1}), I(3));
  EXPECT_EQ(t.at({1, 1}), I(4));
  EXPECT_EQ(t.at({0, 2}), I(5));
  EXPECT_EQ(t.at({1, 2}), I(6));
  EXPECT_EQ(t.values(), ints({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(slots_of(*t.carrier()), ints({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(t.offset(), 0);
  EXPECT_EQ(t.layout(), Layout(Shape{2, 3}, Stride{1, 2}));
  EXPECT_EQ(t.carrier()->version(), 0u);  // construction is not a write
}

TEST(CoreConcepts_4_1_Tensor, MakeTensorSizeMismatchRaisesValueError) {
  EXPECT_THROW_EXACTLY(sw::make_tensor<sw::CPU>({1, 2, 3}, Shape{2, 2}), sw::ValueError);
  EXPECT_THROW_EXACTLY(sw::make_tensor<sw::Generic>({1.0f, 2.0f}, Shape{3}), sw::ValueError);
}

TEST(CoreConcepts_4_1_Tensor, BadCoordinateRaisesValueErrorAndChangesNothing) {
  Tensor t = example_2x3<sw::CPU>();
  const State before = state_of(t);
  EXPECT_THROW_EXACTLY(t.at({2, 0}), sw::ValueError);
  EXPECT_THROW_EXACTLY(t.at({0, 3}), sw::ValueError);
  EXPECT_THROW_EXACTLY(t.at({-1, 0}), sw::ValueError);
  EXPECT_THROW_EXACTLY(t.at({0}), sw::ValueError);
  EXPECT_THROW_EXACTLY(t.at({0, 0, 0}), sw::ValueError);
  EXPECT_THROW_EXACTLY(t.at_ordinal(6), sw::ValueError);
  EXPECT_THROW_EXACTLY(set_at(t, {2, 0}, I(9)), sw::ValueError);
  EXPECT_THROW_EXACTLY(set_at(t, {0}, I(9)), sw::ValueError);
  EXPECT_EQ(state_of(t), before);
}

// ===========================================================================
// 4.2 Queries.

TEST(CoreConcepts_4_2_Tensor, QueriesReadTheSubtensor) {
  auto c = sw::Generic::create(std::vector<Value>{F(1), F(2), F(3), F(4), F(5)}, DType::Float32());
  const Layout l(Shape{2, 2}, Stride{1, 2});
  const Tensor t(c, 1, l);
  EXPECT_EQ(t.carrier().get(), c.get());
  EXPECT_EQ(t.offset(), 1);
  EXPECT_EQ(t.layout(), l);
  EXPECT_EQ(t.shape(), (Shape{2, 2}));
  EXPECT_EQ(t.rank(), 2u);
  EXPECT_EQ(&t.dtype(), &DType::Float32());
  EXPECT_EQ(t.size(), 4);
  EXPECT_EQ(t.carrier_type(), sw::carrier_class<sw::Generic>());
  EXPECT_EQ(t.values(), (std::vector<Value>{F(2), F(3), F(4), F(5)}));
}

TEST(CoreConcepts_4_2_Tensor, DtypeIsTheCarrierDtype) {
  EXPECT_EQ(&sw::make_tensor<sw::CPU>({1, 2}, Shape{2}).dtype(), &DType::Int32());
  EXPECT_EQ(&sw::make_tensor<sw::CPU>({1.0f, 2.0f}, Shape{2}).dtype(), &DType::Float32());
  EXPECT_EQ(&sw::make_tensor<sw::Generic>({true, false}, Shape{2}).dtype(), &DType::Bool());
}

TEST(CoreConcepts_4_2_Tensor, SizeIsTheLogicalSize) {
  // A broadcast tensor has more logical elements than carrier slots.
  const Tensor t = sw::make_tensor<sw::CPU>({1, 2, 3}, Shape{1, 3}).broadcast_to(Shape{4, 3});
  EXPECT_EQ(t.size(), 12);
  EXPECT_EQ(t.carrier()->size(), 3);
  // A gapped view has fewer.
  const Tensor s = example_2x3<sw::CPU>().slice(1, 0, 3, 2);
  EXPECT_EQ(s.size(), 4);
  EXPECT_EQ(s.carrier()->size(), 6);
}

TEST(CoreConcepts_4_2_Tensor, CarrierTypeIsTheExactClass) {
  EXPECT_EQ(example_2x3<sw::CPU>().carrier_type(), sw::carrier_class<sw::CPU>());
  EXPECT_EQ(example_2x3<sw::Generic>().carrier_type(), sw::carrier_class<sw::Generic>());
  EXPECT_NE(example_2x3<sw::CPU>().carrier_type(), example_2x3<sw::Generic>().carrier_type());
  EXPECT_NE(example_2x3<sw::CPU>().carrier_type(), sw::carrier_class<Carrier>());
}

// ===========================================================================
// 4.3 Sharing and lifetime.

TEST(CoreConcepts_4_3_Tensor, ManyTensorsShareOneCarrier) {
  auto c = sw::CPU::from_values(ints({1, 2, 3, 4, 5, 6}), DType::Int32());
  const Tensor whole(c, Shape{6});
  const Tensor front(c, 0, Layout::compact(Shape{3}));
  const Tensor back(c, 3, Layout::compact(Shape{3}));
  const Tensor grid(c, Shape{2, 3});
  EXPECT_EQ(whole.carrier().get(), c.get());
  EXPECT_EQ(front.carrier().get(), c.get());
  EXPECT_EQ(back.carrier().get(), c.get());
  EXPECT_EQ(grid.carrier().get(), c.get());
  c->set_value(4, I(50));
  EXPECT_EQ(whole.at({4}), I(50));
  EXPECT_EQ(back.at({1}), I(50));
  EXPECT_EQ(grid.at({0, 2}), I(50));
  EXPECT_EQ(front.values(), ints({1, 2, 3}));
}

TEST(CoreConcepts_4_3_Tensor, TensorKeepsItsCarrierAlive) {
  std::weak_ptr<Carrier> weak;
  {
    Tensor t = [&] {
      auto c = sw::CPU::from_values(ints({7, 8}), DType::Int32());
      weak = c;
      return Tensor(c, Shape{2});
    }();
    EXPECT_FALSE(weak.expired());
    EXPECT_EQ(t.values(), ints({7, 8}));
    const Tensor view = t.slice(0, 1, 2);
    t = Tensor(sw::CPU::create(1, DType::Int32()), Shape{1});
    EXPECT_FALSE(weak.expired());  // the view still holds it
    EXPECT_EQ(view.values(), ints({8}));
  }
  EXPECT_TRUE(weak.expired());
}

TEST(CoreConcepts_4_3_Tensor, TensorsNeverReleaseTheirCarrier) {
  auto c = sw::Generic::create(ints({1, 2}), DType::Int32());
  {
    const Tensor t(c, Shape{2});
    const Tensor v = t.permute({0});
    (void)v.values();
  }
  EXPECT_FALSE(c->is_released());
  EXPECT_EQ(slots_of(*c), ints({1, 2}));
  EXPECT_EQ(c->version(), 0u);
}

TEST(CoreConcepts_4_3_Tensor, ReleasingTheCarrierMakesEveryTensorOverItRaiseRuntimeError) {
  Tensor t = example_2x3<sw::CPU>();
  const Tensor view = t.permute({1, 0});
  t.carrier()->release();
  EXPECT_THROW_EXACTLY(t.at({0, 0}), sw::RuntimeError);
  EXPECT_THROW_EXACTLY(t.at_ordinal(0), sw::RuntimeError);
  EXPECT_THROW_EXACTLY(t.values(), sw::RuntimeError);
  EXPECT_THROW_EXACTLY(view.values(), sw::RuntimeError);
  EXPECT_THROW_EXACTLY(set_at(t, {0, 0}, I(1)), sw::RuntimeError);
  EXPECT_THROW_EXACTLY(t.permute({1, 0}), sw::RuntimeError);
  EXPECT_THROW_EXACTLY(t.slice(0, 0, 1), sw::RuntimeError);
  // Metadata is still there.
  EXPECT_EQ(t.size(), 6);
  EXPECT_EQ(&t.dtype(), &DType::Int32());
  EXPECT_EQ(t.carrier()->version(), 0u);
}

// ===========================================================================
// 4.4-4.5 Pure views share the carrier and read the right elements; this
// suite runs over every shipped carrier.

template <class C>
class CoreConcepts_4_4_TensorView : public ::testing::Test {};
TYPED_TEST_SUITE(CoreConcepts_4_4_TensorView, ShippedCarriers, sw_support::ShippedCarrierName);

TYPED_TEST(CoreConcepts_4_4_TensorView, PermuteSwapsCoordinates) {
  const Tensor t = example_2x3<TypeParam>();
  const Tensor p = t.permute({1, 0});
  EXPECT_EQ(p.carrier().get(), t.carrier().get());
  EXPECT_EQ(p.shape(), (Shape{3, 2}));
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j) EXPECT_EQ(p.at({j, i}), t.at({i, j})) << i << "," << j;
  EXPECT_EQ(p.values(), ints({1, 3, 5, 2, 4, 6}));
  EXPECT_EQ(p.offset(), 0);
}

TYPED_TEST(CoreConcepts_4_4_TensorView, SliceReadsTheSelectedElements) {
  const Tensor t = example_2x3<TypeParam>();
  const Tensor cols = t.slice(1, 1, 3);
  EXPECT_EQ(cols.carrier().get(), t.carrier().get());
  EXPECT_EQ(cols.shape(), (Shape{2, 2}));
  EXPECT_EQ(cols.offset(), 2);
  EXPECT_EQ(cols.values(), ints({3, 4, 5, 6}));
  const Tensor stepped = t.slice(1, 0, 3, 2);
  EXPECT_EQ(stepped.values(), ints({1, 2, 5, 6}));
  EXPECT_EQ(stepped.at({1, 1}), I(6));
  const Tensor row = t.slice(0, 1, 2);
  EXPECT_EQ(row.shape(), (Shape{1, 3}));
  EXPECT_EQ(row.offset(), 1);
  EXPECT_EQ(row.values(), ints({2, 4, 6}));
  // Negative axis and python-style clamping.
  EXPECT_EQ(t.slice(-1, -1, 100).values(), ints({5, 6}));
  EXPECT_EQ(t.slice(1, 2, 1).size(), 0);
}

TYPED_TEST(CoreConcepts_4_4_TensorView, ReshapeKeepsLogicalOrder) {
  const Tensor t = example_2x3<TypeParam>();
  const Tensor r = t.reshape(Shape{3, 2});
  EXPECT_EQ(r.carrier().get(), t.carrier().get());
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_EQ(r.values(), ints({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(r.at({0, 1}), I(4));
  EXPECT_EQ(r.at({2, 1}), I(6));
  EXPECT_EQ(t.reshape(Shape{6}).values(), ints({1, 2, 3, 4, 5, 6}));
  // Reshaping a permuted view is still a view in the permuted order.
  const Tensor pr = t.permute({1, 0}).reshape(Shape{6});
  EXPECT_EQ(pr.carrier().get(), t.carrier().get());
  EXPECT_EQ(pr.values(), ints({1, 3, 5, 2, 4, 6}));
}

TYPED_TEST(CoreConcepts_4_4_TensorView, SqueezeAndUnsqueezeKeepTheElements) {
  const Tensor t = example_2x3<TypeParam>();
  const Tensor u = t.unsqueeze(0);
  EXPECT_EQ(u.carrier().get(), t.carrier().get());
  EXPECT_EQ(u.shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(u.at({0, 1, 2}), I(6));
  EXPECT_EQ(u.values(), t.values());
  const Tensor last = t.unsqueeze(-1);
  EXPECT_EQ(last.shape(), (Shape{2, 3, 1}));
  EXPECT_EQ(last.at({1, 1, 0}), I(4));
  const Tensor s = u.squeeze();
  EXPECT_EQ(s.carrier().get(), t.carrier().get());
  EXPECT_EQ(s.shape(), (Shape{2, 3}));
  EXPECT_EQ(s.values(), ints({1, 2, 3, 4, 5, 6}));
  const Tensor row = t.slice(0, 1, 2).squeeze(std::vector<std::int64_t>{0});
  EXPECT_EQ(row.shape(), (Shape{3}));
  EXPECT_EQ(row.values(), ints({2, 4, 6}));
}

TYPED_TEST(CoreConcepts_4_4_TensorView, BroadcastToRepeatsWithoutCopying) {
  const Tensor t = sw::make_tensor<TypeParam>({1, 2, 3}, Shape{1, 3});
  const Tensor b = t.broadcast_to(Shape{2, 3});
  EXPECT_EQ(b.carrier().get(), t.carrier().get());
  EXPECT_EQ(b.shape(), (Shape{2, 3}));
  EXPECT_EQ(b.values(), ints({1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(b.carrier()->size(), 3);
  const Tensor lead = t.broadcast_to(Shape{4, 1, 3});
  EXPECT_EQ(lead.size(), 12);
  EXPECT_EQ(lead.at({3, 0, 2}), I(3));
  // A write through the carrier is seen at every broadcast position.
  t.carrier()->set_value(1, I(20));
  EXPECT_EQ(b.values(), ints({1, 1, 20, 20, 3, 3}));
}

TYPED_TEST(CoreConcepts_4_4_TensorView, AsStridedChoosesNewOffsetAndLayout) {
  const Tensor t = example_2x3<TypeParam>();
  const Tensor a = t.as_strided(Layout(Shape{2}, Stride{2}), 1);
  EXPECT_EQ(a.carrier().get(), t.carrier().get());
  EXPECT_EQ(a.offset(), 1);
  EXPECT_EQ(a.values(), ints({2, 4}));
  const Tensor overlap = t.as_strided(Layout(Shape{3, 2}, Stride{1, 1}), 2);  // overlapping windows
  EXPECT_EQ(overlap.values(), ints({3, 4, 5, 4, 5, 6}));
  const Tensor bc = t.as_strided(Layout(Shape{3}, Stride{0}), 5);
  EXPECT_EQ(bc.values(), ints({6, 6, 6}));
}

TYPED_TEST(CoreConcepts_4_4_TensorView, WritesThroughAViewReachTheSharedCarrier) {
  Tensor t = example_2x3<TypeParam>();
  Tensor p = t.permute({1, 0});
  set_at(p, {2, 1}, I(60));  // (j=2, i=1) of the permuted view is (1, 2)
  EXPECT_EQ(t.at({1, 2}), I(60));
  Tensor cols = t.slice(1, 1, 3);
  set_at(cols, {0, 0}, I(30));  // (0, 1) of t
  EXPECT_EQ(t.at({0, 1}), I(30));
  EXPECT_EQ(slots_of(*t.carrier()), ints({1, 2, 30, 4, 5, 60}));
  EXPECT_EQ(t.carrier()->version(), 2u);
}

TYPED_TEST(CoreConcepts_4_4_TensorView, BadViewArgumentsRaiseValueErrorAndChangeNothing) {
  const Tensor t = example_2x3<TypeParam>();
  const State before = state_of(t);
  EXPECT_THROW_EXACTLY(t.permute({0, 0}), sw::ValueError);
  EXPECT_THROW_EXACTLY(t.permute({0}), sw::ValueError);
  EXPECT_THROW_EXACTLY(t.permute({0, 2}), sw::ValueError);
  EXPECT_THROW_EXACTLY(t.slice(2, 0, 1), sw::ValueError);
  EXPECT_THROW_EXACTLY(t.slice(0, 0, 2, 0), sw::ValueError);
  EXPECT_THROW_EXACTLY(t.reshape(Shape{4}), sw::ValueError);
  EXPECT_THROW_EXACTLY(t.reshape(Shape{4, 2}), sw::ValueError);
  EXPECT_THROW_EXACTLY(t.squeeze(std::vector<std::int64_t>{0}), sw::ValueError);
  EXPECT_THROW_EXACTLY(t.unsqueeze(4), sw::ValueError);
  EXPECT_THROW_EXACTLY(t.broadcast_to(Shape{4, 3}), sw::ValueError);
  EXPECT_THROW_EXACTLY(t.broadcast_to(Shape{3}), sw::ValueError);
  // as_strided re-validates bounds against the carrier.
  EXPECT_THROW_EXACTLY(t.as_strided(Layout(Shape{2}, Stride{3}), 3), sw::ValueError);
  EXPECT_THROW_EXACTLY(t.as_strided(Layout::compact(Shape{7}), 0), sw::ValueError);
  EXPECT_THROW_EXACTLY(t.as_strided(Layout::compact(Shape{1}), -1), sw::ValueError);
  EXPECT_EQ(state_of(t), before);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
}

// ===========================================================================
// 2.1 through a Tensor: Tensor::set is a versioned carrier write.

TEST(CoreConcepts_2_1_TensorVersion, SetBumpsTheCarrierVersionByOne) {
  Tensor t = example_2x3<sw::CPU>();
  ASSERT_EQ(t.carrier()->version(), 0u);
  set_at(t, {1, 2}, I(60));
  EXPECT_EQ(t.carrier()->version(), 1u);
  EXPECT_EQ(t.at({1, 2}), I(60));
  EXPECT_EQ(t.carrier()->get_value(5), I(60));
  set_at(t, {0, 0}, I(10));
  EXPECT_EQ(t.carrier()->version(), 2u);
  EXPECT_EQ(t.values(), ints({10, 2, 3, 4, 5, 60}));
}

TEST(CoreConcepts_2_1_TensorVersion, ViewsShareTheCarrierVersion) {
  Tensor t = example_2x3<sw::Generic>();
  Tensor v = t.slice(0, 1, 2);
  set_at(v, {0, 0}, I(20));
  EXPECT_EQ(t.carrier()->version(), 1u);
  EXPECT_EQ(v.carrier()->version(), 1u);
  // Building views and reading add nothing.
  (void)t.permute({1, 0}).values();
  (void)t.broadcast_to(Shape{2, 2, 3});
  EXPECT_EQ(t.carrier()->version(), 1u);
}

TEST(CoreConcepts_2_1_TensorVersion, FailedSetAddsNothing) {
  Tensor t = example_2x3<sw::CPU>();
  set_at(t, {0, 0}, I(0));
  const State before = state_of(t);
  EXPECT_THROW_EXACTLY(set_at(t, {0, 0}, F(1)), sw::TypeError);
  EXPECT_THROW_EXACTLY(set_at(t, {0, 0}, B(true)), sw::TypeError);
  EXPECT_THROW_EXACTLY(set_at(t, {0, 5}, I(1)), sw::ValueError);
  EXPECT_EQ(state_of(t), before);
  EXPECT_EQ(before.version, 1u);

  auto frozen = sw::CPU::from_values(ints({1, 2}), DType::Int32(), /*mutable_=*/false);
  Tensor f(frozen, Shape{2});
  EXPECT_THROW_EXACTLY(set_at(f, {1}, I(9)), sw::RuntimeError);
  EXPECT_EQ(f.values(), ints({1, 2}));
  EXPECT_EQ(frozen->version(), 0u);
}

// ===========================================================================
// 6.1 Differentiability follows the exact logical dtype.

TEST(CoreConcepts_6_1_Tensor, OnlyFloat32IsDifferentiable) {
  EXPECT_TRUE(sw::make_tensor<sw::CPU>({1.0f, 2.0f}, Shape{2}).is_differentiable());
  EXPECT_TRUE(sw::make_tensor<sw::Generic>({1.0f}, Shape{1}).is_differentiable());
  EXPECT_FALSE(sw::make_tensor<sw::CPU>({1, 2}, Shape{2}).is_differentiable());
  EXPECT_FALSE(sw::make_tensor<sw::Generic>({true, false}, Shape{2}).is_differentiable());
  // Views keep the answer.
  EXPECT_TRUE(sw::make_tensor<sw::CPU>({1.0f, 2.0f}, Shape{2}).slice(0, 0, 1).is_differentiable());
}

// ===========================================================================
// Handle identity (cpp-mapping.md "Values and identities"; tensor.h).

TEST(CoreConcepts_4_Tensor, CopiesOfAHandleAreTheSameTensor) {
  const Tensor t = example_2x3<sw::CPU>();
  const Tensor copy = t;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_TRUE(copy.is(t));
  EXPECT_TRUE(t.is(copy));
  EXPECT_TRUE(t.is(t));
  Tensor moved_into = example_2x3<sw::CPU>();
  EXPECT_FALSE(moved_into.is(t));
  moved_into = t;
  EXPECT_TRUE(moved_into.is(t));
}

TEST(CoreConcepts_4_Tensor, ViewsAndLookAlikesAreDifferentTensors) {
  const Tensor t = example_2x3<sw::CPU>();
  EXPECT_FALSE(t.permute({0, 1}).is(t));  // identity permutation, still a new tensor
  EXPECT_FALSE(t.reshape(Shape{2, 3}).is(t));
  const Tensor twin(t.carrier(), t.offset(), t.layout());
  EXPECT_FALSE(twin.is(t));
  EXPECT_EQ(twin.values(), t.values());
}

// ===========================================================================
// TypedTensor<T>: the typed face of the same value.

TEST(CoreConcepts_4_TypedTensor, WrapsWithoutCopying) {
  const Tensor t = sw::make_tensor<sw::CPU>({1.5f, 2.5f, 3.5f, 4.5f}, Shape{2, 2});
  const TypedTensor<float> typed(t);
  EXPECT_TRUE(typed.erased().is(t));
  EXPECT_EQ(typed.erased().carrier().get(), t.carrier().get());
  const Tensor& erased = typed;  // implicit conversion to the erased face
  EXPECT_EQ(&erased, &typed.erased());
  EXPECT_TRUE(erased.is(t));
  EXPECT_EQ(t.carrier()->version(), 0u);
  // A write through the erased handle is seen through the typed one.
  t.carrier()->set_value(3, F(40.0f));
  EXPECT_EQ(typed.at({1, 1}), 40.0f);
}

TEST(CoreConcepts_4_TypedTensor, ValuesAndAtAreTyped) {
  const TypedTensor<float> f(sw::make_tensor<sw::Generic>({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, Shape{2, 3}));
  EXPECT_EQ(f.values(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(f.at({1, 2}), 6.0f);
  EXPECT_EQ(f.at({0, 1}), 3.0f);
  EXPECT_EQ(f.at_ordinal(3), 4.0f);
  EXPECT_EQ(f.shape(), (Shape{2, 3}));
  EXPECT_EQ(f.size(), 6);
  EXPECT_EQ(&TypedTensor<float>::dtype(), &DType::Float32());

  const TypedTensor<std::int32_t> i(example_2x3<sw::CPU>().permute({1, 0}));
  EXPECT_EQ(i.values(), (std::vector<std::int32_t>{1, 3, 5, 2, 4, 6}));
  EXPECT_EQ(i.at({2, 1}), 6);
  EXPECT_EQ(&TypedTensor<std::int32_t>::dtype(), &DType::Int32());

  const TypedTensor<bool> b(sw::make_tensor<sw::CPU>({true, false, true}, Shape{3}));
  EXPECT_EQ(b.values(), (std::vector<bool>{true, false, true}));
  EXPECT_FALSE(b.at({1}));
  EXPECT_EQ(&TypedTensor<bool>::dtype(), &DType::Bool());
}

TEST(CoreConcepts_4_TypedTensor, WrongDtypeRaisesTypeErrorNamingBothDtypes) {
  const Tensor ints_tensor = example_2x3<sw::CPU>();
  const State before = state_of(ints_tensor);
  EXPECT_THROW_EXACTLY(TypedTensor<float>{ints_tensor}, sw::TypeError);
  EXPECT_THROW_EXACTLY(TypedTensor<bool>{ints_tensor}, sw::TypeError);
  const Tensor floats = sw::make_tensor<sw::Generic>({1.0f}, Shape{1});
  EXPECT_THROW_EXACTLY(TypedTensor<std::int32_t>{floats}, sw::TypeError);
  try {
    TypedTensor<float> typed(ints_tensor);
    ADD_FAILURE() << "expected TypeError";
  } catch (const sw::TypeError& e) {
    EXPECT_ERROR_TYPE_IS(e, sw::TypeError);
    const std::string message = e.what();
    EXPECT_NE(message.find("float32"), std::string::npos) << message;
    EXPECT_NE(message.find("int32"), std::string::npos) << message;
  }
  EXPECT_EQ(state_of(ints_tensor), before);
}

TEST(CoreConcepts_4_TypedTensor, RequireDtypeChecksIdentity) {
  const Tensor t = sw::make_tensor<sw::CPU>({1.0f}, Shape{1});
  EXPECT_NO_THROW(sw::require_dtype(t, DType::Float32(), "test"));
  EXPECT_THROW_EXACTLY(sw::require_dtype(t, DType::Float64(), "test"), sw::TypeError);
  EXPECT_THROW_EXACTLY(sw::require_dtype(t, DType::Floating(), "test"), sw::TypeError);  // a supertype is not the dtype
  static const sw::SimpleDType& lookalike =  // registered once per process
      sw::SimpleDType::create("test_core_tensor.float32_lookalike", 32, DType::Floating());
  EXPECT_THROW_EXACTLY(sw::require_dtype(t, lookalike, "test"), sw::TypeError);
}

// Issue 20: one word per tensor for a language binding (Python keeps the
// tensor's one object there). Shared by the handles of one tensor, by no
// other tensor (a view or a compact layout of the same storage is another
// tensor), null until set.
TEST(Issue20_BindingSlot, SharedByTheHandlesOfOneTensorOnly) {
  const strideweave::Tensor t = strideweave::tensor<strideweave::CPU, float>({1.0f, 2.0f});
  EXPECT_EQ(t.binding_slot(), nullptr);
  int marker = 0;
  t.set_binding_slot(&marker);
  const strideweave::Tensor handle = t;  // copies the handle: the same tensor
  EXPECT_EQ(handle.binding_slot(), &marker);
  const strideweave::Tensor other(t.carrier(), 0, t.layout());  // the same storage, another tensor
  EXPECT_EQ(other.binding_slot(), nullptr);
  handle.set_binding_slot(nullptr);
  EXPECT_EQ(t.binding_slot(), nullptr);
}

// Issue 20: a tiny CPU tensor's storage lives inside its carrier object; it
// reads, writes, releases and copies like any other (the boundary sizes).
TEST(Issue20_CpuInlineStorage, TinyAndJustLargerStorageBehaveAlike) {
  namespace sw = strideweave;
  for (std::int64_t n : {0, 1, 15, 16, 17, 64}) {
    const auto c = sw::CPU::create(n, sw::DType::Float32());
    for (std::int64_t i = 0; i < n; ++i) EXPECT_EQ(c->get_value(i).f, 0.0f) << n;  // zeroed
    for (std::int64_t i = 0; i < n; ++i) c->set_value(i, sw::Value::from_float32(static_cast<float>(i)));
    const sw::Tensor t(c, sw::Shape::of({n}));
    const auto copy = c->new_like(std::vector<sw::Value>(n, sw::Value::from_float32(0.0f)));
    for (std::int64_t i = 0; i < n; ++i) copy->set_value(i, t.at({i}));
    for (std::int64_t i = 0; i < n; ++i) EXPECT_EQ(copy->get_value(i).f, static_cast<float>(i)) << n;
    c->release();
    EXPECT_TRUE(c->is_released());
  }
  const auto b = sw::CPU::create(64, sw::DType::Bool(), true, true);  // Bool is always zeroed
  for (std::int64_t i = 0; i < 64; ++i) EXPECT_FALSE(b->get_value(i).b);
}
