// Int32 overflow through broadcast and strided operands (docs/numerics.md:
// checked Int32 arithmetic raises OverflowError and never wraps), on every
// shipped carrier. The conformance sweep compares the carriers on random
// layouts; these cases aim at the layout paths a kernel handles separately:
// the overflowing element is reached only through a broadcast (stride-0)
// operand, or only through a strided or permuted view, so a kernel that
// reads such an operand as if it were compact misses it. The same views
// holding the large value outside the view must not raise.
//
// A raising call publishes nothing: no result is returned, a caller-provided
// output keeps its values and version, and the operands' storage and
// versions are unchanged.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "support/expect_exactly.h"

#include <fmt/format.h>

namespace {

using namespace strideweave;

constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();

std::vector<Value> int32_values(const std::vector<std::int32_t>& v) {
  std::vector<Value> out;
  for (std::int32_t x : v) out.push_back(Value::from_int32(x));
  return out;
}

// Int32 storage of `carrier` holding `slots`, viewed compactly as `shape`.
Tensor int32_on(const ShippedCarrier& carrier, const std::vector<std::int32_t>& slots, const Shape& shape) {
  return Tensor(carrier.make(int32_values(slots), DType::Int32()), shape);
}

std::vector<std::int32_t> ints(const Tensor& t) { return TypedTensor<std::int32_t>(t).values(); }

// Every storage slot and the version of a tensor's carrier.
struct StorageState {
  std::vector<Value> slots;
  std::uint64_t version;
  friend bool operator==(const StorageState&, const StorageState&) = default;
};
StorageState state_of(const Tensor& t) {
  StorageState s{{}, t.carrier()->version()};
  for (std::int64_t i = 0; i < t.carrier()->size(); ++i) s.slots.push_back(t.carrier()->get_value(i));
  return s;
}

// `call` raises exactly OverflowError, with an owned result and into a
// caller-provided output of the result's shape, and leaves the operands and
// that output as they were.
void expect_overflow_publishes_nothing(const ShippedCarrier& carrier, const std::string& label,
                                       const std::vector<Tensor>& operands, const Shape& result_shape,
                                       const std::function<Tensor(const Output&)>& call) {
  SCOPED_TRACE(std::string(carrier.name) + ": " + label);
  std::vector<StorageState> before;
  for (const Tensor& t : operands) before.push_back(state_of(t));
  EXPECT_THROW_EXACTLY(call(Output{}), OverflowError);
  std::vector<std::int32_t> sentinel(static_cast<std::size_t>(result_shape.size()), -7);
  const Tensor out = int32_on(carrier, sentinel, result_shape);
  const StorageState out_before = state_of(out);
  EXPECT_THROW_EXACTLY(call(into(out)), OverflowError);
  EXPECT_EQ(state_of(out), out_before) << "the caller's output was written";
  for (std::size_t i = 0; i < operands.size(); ++i) EXPECT_EQ(state_of(operands[i]), before[i]) << "operand " << i;
}

struct BinaryCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&, const Output&)> fn;
  std::int32_t large, small;  // fn(small, large) and fn(large, small) leave Int32; fn(0, large) does not
};

const std::vector<BinaryCase>& binary_cases() {
  static const std::vector<BinaryCase> cases = {
      {"add", [](const Tensor& a, const Tensor& b, const Output& o) { return add(a, b, o); }, kMax, 1},
      {"sub", [](const Tensor& a, const Tensor& b, const Output& o) { return sub(a, b, o); }, kMax, -2},
      {"mul", [](const Tensor& a, const Tensor& b, const Output& o) { return mul(a, b, o); }, kMax, 2},
      {"elementwise_mul", [](const Tensor& a, const Tensor& b, const Output& o) { return elementwise_mul(a, b, o); }, kMax, 2},
  };
  return cases;
}

class Int32Overflow : public ::testing::TestWithParam<std::size_t> {
 protected:
  const ShippedCarrier& carrier() const { return shipped_carriers()[GetParam()]; }
};

std::string carrier_name(const ::testing::TestParamInfo<std::size_t>& info) {
  return std::string(shipped_carriers()[info.param].name);
}

INSTANTIATE_TEST_SUITE_P(EveryShippedCarrier, Int32Overflow,
                         ::testing::Range<std::size_t>(0, shipped_carriers().size()), carrier_name);

TEST_P(Int32Overflow, ReachedOnlyThroughABroadcastOperand) {
  const ShippedCarrier& c = carrier();
  for (const BinaryCase& bc : binary_cases()) {
    // x: (3, 4), zero but for `small` at (2, 3), the last element in logical
    // order. y: (4) holding `large` at 3, broadcast along axis 0 (stride 0):
    // only row 2 pairs `small` with it.
    std::vector<std::int32_t> xs(12, 0);
    xs[11] = bc.small;
    const Tensor x = int32_on(c, xs, Shape{3, 4});
    const Tensor y = int32_on(c, {0, 0, 0, bc.large}, Shape{4});
    const Shape result{3, 4};
    // Broadcast by the front end, in both operand orders ...
    expect_overflow_publishes_nothing(c, std::string(bc.name) + "(x, y (4))", {x, y}, result,
                                      [&](const Output& o) { return bc.fn(x, y, o); });
    expect_overflow_publishes_nothing(c, std::string(bc.name) + "(y (4), x)", {x, y}, result,
                                      [&](const Output& o) { return bc.fn(y, x, o); });
    // ... and handed to the kernel as a stride-0 view of the result's shape.
    const Tensor y_view = y.broadcast_to(result);
    expect_overflow_publishes_nothing(c, std::string(bc.name) + "(x, broadcast_to view)", {x, y}, result,
                                      [&](const Output& o) { return bc.fn(x, y_view, o); });
    // Broadcast along the other axis: z (3, 1) holds `large` in row 2.
    const Tensor z = int32_on(c, {0, 0, bc.large}, Shape{3, 1});
    expect_overflow_publishes_nothing(c, std::string(bc.name) + "(z (3,1), x)", {x, z}, result,
                                      [&](const Output& o) { return bc.fn(z, x, o); });
    // The same operands with `small` in a row that meets no large value: no
    // overflow, and the exact result.
    std::vector<std::int32_t> xs_safe(12, 0);
    xs_safe[10] = bc.small;  // (1, 3): y's large value, but z's row 1 is zero
    const Tensor x_safe = int32_on(c, xs_safe, Shape{3, 4});
    const std::vector<std::int32_t> got = ints(bc.fn(z, x_safe, Output{}));
    ASSERT_EQ(got.size(), 12u);
    for (std::size_t k = 0; k < got.size(); ++k) {
      const std::int32_t zi = k % 3 == 2 ? bc.large : 0;
      const std::int32_t xi = xs_safe[k];
      const std::int64_t expected = std::string(bc.name) == "add"   ? std::int64_t{zi} + xi
                                    : std::string(bc.name) == "sub" ? std::int64_t{zi} - xi
                                                                    : std::int64_t{zi} * xi;
      EXPECT_EQ(got[k], expected) << bc.name << " element " << k;
    }
  }
}

TEST_P(Int32Overflow, ReachedOnlyThroughAStridedView) {
  const ShippedCarrier& c = carrier();
  // Storage of 8 slots, `large` at slot 7; the view takes the odd slots
  // (offset 1, stride 2), so its last element holds it. A kernel reading 4
  // contiguous slots from the view's offset sees only zeros.
  for (const BinaryCase& bc : binary_cases()) {
    std::vector<std::int32_t> slots(8, 0);
    slots[7] = bc.large;
    const Tensor base = int32_on(c, slots, Shape{8});
    const Tensor odd = base.slice(0, 1, 8, 2);
    ASSERT_EQ(ints(odd), (std::vector<std::int32_t>{0, 0, 0, bc.large}));
    const Tensor other = int32_on(c, {bc.small, bc.small, bc.small, bc.small}, Shape{4});
    expect_overflow_publishes_nothing(c, std::string(bc.name) + "(odd slots, other)", {base, other}, Shape{4},
                                      [&](const Output& o) { return bc.fn(odd, other, o); });
    expect_overflow_publishes_nothing(c, std::string(bc.name) + "(other, odd slots)", {base, other}, Shape{4},
                                      [&](const Output& o) { return bc.fn(other, odd, o); });
    // The even slots (offset 0, stride 2) do not hold it: no overflow, even
    // though slot 1, next to the view's first element, holds `large` too.
    std::vector<std::int32_t> decoy(8, 0);
    decoy[1] = bc.large;
    const Tensor even = int32_on(c, decoy, Shape{8}).slice(0, 0, 8, 2);
    EXPECT_EQ(ints(bc.fn(even, other, Output{})).size(), 4u);
  }
  // Tensor/scalar: mul and pow by a weak scalar, and the reduction.
  std::vector<std::int32_t> slots(8, 0);
  slots[5] = kMax;
  slots[7] = kMax;
  const Tensor base = int32_on(c, slots, Shape{8});
  const Tensor odd = base.slice(0, 1, 8, 2);
  expect_overflow_publishes_nothing(c, "mul(odd slots, 2)", {base}, Shape{4}, [&](const Output& o) { return mul(odd, 2, o); });
  expect_overflow_publishes_nothing(c, "pow(odd slots, 2)", {base}, Shape{4}, [&](const Output& o) { return pow(odd, 2, o); });
  expect_overflow_publishes_nothing(c, "reduce_sum(odd slots)", {base}, Shape{}, [&](const Output& o) { return reduce_sum(odd, Axes::all(), false, std::nullopt, o); });
  const Tensor even = base.slice(0, 0, 8, 2);
  EXPECT_EQ(ints(reduce_sum(even)), std::vector<std::int32_t>{0});
  EXPECT_EQ(ints(mul(even, 2)), (std::vector<std::int32_t>{0, 0, 0, 0}));
}

TEST_P(Int32Overflow, ReachedOnlyThroughAPermutedView) {
  const ShippedCarrier& c = carrier();
  // base: compact (4, 2), slot = i + 4 j. p = base.permute({1, 0}) has shape
  // (2, 4) with p(a, b) = base(b, a) = slot b + 4 a. `large` at slots 1 and 3
  // is p(0, 1) and p(0, 3); read as if compact, p(0, 1) and p(0, 3) would be
  // slots 2 and 6, which hold zero.
  for (const BinaryCase& bc : binary_cases()) {
    std::vector<std::int32_t> slots(8, 0);
    slots[1] = bc.large;
    const Tensor base = int32_on(c, slots, Shape{4, 2});
    const Tensor p = base.permute({1, 0});
    ASSERT_EQ(p.shape(), (Shape{2, 4}));
    // y (2, 4) compact: `small` at (0, 1) only, that is slot 0 + 2 * 1.
    std::vector<std::int32_t> ys(8, 0);
    ys[2] = bc.small;
    const Tensor y = int32_on(c, ys, Shape{2, 4});
    expect_overflow_publishes_nothing(c, std::string(bc.name) + "(permuted, y)", {base, y}, Shape{2, 4},
                                      [&](const Output& o) { return bc.fn(p, y, o); });
    expect_overflow_publishes_nothing(c, std::string(bc.name) + "(y, permuted)", {base, y}, Shape{2, 4},
                                      [&](const Output& o) { return bc.fn(y, p, o); });
  }
  // p(0, 1) and p(1, 1) are slots 1 and 5: column 1 of p holds both, along
  // p's axis 0, whose stride is 4. Reducing over axis 0 overflows there
  // (read as if compact, column 1 would be slots 2 and 3); over axis 1,
  // each row, a contiguous run, holds one of them.
  std::vector<std::int32_t> slots(8, 0);
  slots[1] = kMax;
  slots[5] = kMax;
  const Tensor base = int32_on(c, slots, Shape{4, 2});
  const Tensor p = base.permute({1, 0});
  expect_overflow_publishes_nothing(c, "reduce_sum(permuted, axis 0)", {base}, Shape{4},
                                    [&](const Output& o) { return reduce_sum(p, {0}, false, std::nullopt, o); });
  EXPECT_EQ(ints(reduce_sum(p, std::vector<std::int64_t>{1})), (std::vector<std::int32_t>{kMax, kMax}));
}

TEST_P(Int32Overflow, MatmulReachedOnlyThroughBroadcastBatchOrPermutedOperand) {
  const ShippedCarrier& c = carrier();
  // a (1, 1, 2) = [kMax, kMax], broadcast over b's batch of 3; b (3, 2, 1)
  // is one only in batch 2 (logical ordinals 2 and 5: batch + 3 k).
  const Tensor a = int32_on(c, {kMax, kMax}, Shape{1, 1, 2});
  const Tensor b = int32_on(c, {0, 0, 1, 0, 0, 1}, Shape{3, 2, 1});
  expect_overflow_publishes_nothing(c, "matmul(broadcast batch)", {a, b}, Shape{3, 1, 1},
                                    [&](const Output& o) { return matmul(a, b, std::nullopt, o); });
  const Tensor b_first_batches = b.slice(0, 0, 2);
  EXPECT_EQ(ints(matmul(a, b_first_batches)), (std::vector<std::int32_t>{0, 0}));
  // base (2, 2) compact = slots {kMax, kMax, 0, 0}; its transpose's row 0 is
  // slots 0 and 1, so row 0 of transpose x ones overflows. Read as if
  // compact, row 0 would be slots 0 and 2.
  const Tensor base = int32_on(c, {kMax, kMax, 0, 0}, Shape{2, 2});
  const Tensor ones = int32_on(c, {1, 1}, Shape{2, 1});
  expect_overflow_publishes_nothing(c, "matmul(permuted, ones)", {base, ones}, Shape{2, 1},
                                    [&](const Output& o) { return matmul(base.permute({1, 0}), ones, std::nullopt, o); });
  EXPECT_EQ(ints(matmul(base, ones)), (std::vector<std::int32_t>{kMax, kMax}));
}

}  // namespace

// ---- one message on every carrier (issue 10, item 15: CPU used to omit the
// value Generic printed). Each scenario raises on every shipped carrier with
// exactly the same text, naming the first overflowing result element in
// logical order.

namespace {

struct MessageCase {
  std::string name;
  std::int64_t element;  // the first overflowing result element (logical ordinal)
  std::function<Tensor(const ShippedCarrier&)> run;
};

std::vector<MessageCase> message_cases() {
  // 200,000 elements (beyond the threaded and vectorised grains), two
  // overflowing: the first one must be named, whichever thread meets it.
  constexpr std::int64_t kLong = 200000;
  auto long_with_overflow_at = [](const ShippedCarrier& c, std::vector<std::int64_t> at) {
    std::vector<std::int32_t> v(static_cast<std::size_t>(kLong), 1);
    for (std::int64_t k : at) v[static_cast<std::size_t>(k)] = kMax;
    return int32_on(c, v, Shape{kLong});
  };
  return {
      {"add, the later of two in a long run", 150001,
       [=](const ShippedCarrier& c) {
         const Tensor x = long_with_overflow_at(c, {190000, 150001});
         return add(x, x);
       }},
      {"mul by a weak scalar", 3,
       [](const ShippedCarrier& c) { return mul(int32_on(c, {1, -2, 3, kMax, kMax}, Shape{5}), 2); }},
      {"pow by a weak scalar", 3,
       [](const ShippedCarrier& c) { return pow(int32_on(c, {1, -1, 3, 70000}, Shape{4}), 3); }},
      {"sub of a permuted view", 4,
       [](const ShippedCarrier& c) {
         // Storage slot 2 is element (2, 0) of the compact (3,2) tensor, so
         // element (0, 2) of its (2,3) transpose: logical ordinal 0 + 2*2 = 4.
         const Tensor x = int32_on(c, {0, 0, -kMax, 0, 0, 0}, Shape{3, 2}).permute({1, 0});
         return sub(x, int32_on(c, {0, 0, 0, 0, 5, 5}, Shape{2, 3}));
       }},
      {"reduce_sum over axis 1", 1,
       [](const ShippedCarrier& c) {
         // Row 0 holds slots 0, 2, 4 (sum 2), row 1 slots 1, 3, 5 (2 * kMax + 1).
         return reduce_sum(int32_on(c, {1, kMax, 0, kMax, 1, 1}, Shape{2, 3}), {1});
       }},
      {"matmul", 3,
       [](const ShippedCarrier& c) {
         const Tensor a = int32_on(c, {1, kMax, 1, kMax}, Shape{2, 2});  // rows (1, 1) and (kMax, kMax)
         const Tensor b = int32_on(c, {0, 0, 1, 1}, Shape{2, 2});        // columns (0, 0) and (1, 1)
         return matmul(a, b);  // (0, 1) = 2; (1, 1) = 2 * kMax, logical ordinal 1 + 2 * 1 = 3
       }},
  };
}

TEST(Int32OverflowMessage, IsTheSameOnEveryShippedCarrierAndNamesTheFirstElement) {
  for (const MessageCase& mc : message_cases()) {
    SCOPED_TRACE(mc.name);
    std::vector<std::string> messages;
    for (const ShippedCarrier& c : shipped_carriers()) {
      messages.push_back(EXACT_ERROR_MESSAGE(mc.run(c), OverflowError));
      EXPECT_NE(messages.back().find(fmt::format("element {} ", mc.element)), std::string::npos)
          << c.name << ": " << messages.back();
    }
    for (std::size_t i = 1; i < messages.size(); ++i)
      EXPECT_EQ(messages[i], messages[0]) << shipped_carriers()[i].name << " vs " << shipped_carriers()[0].name;
  }
}

}  // namespace
