// Issue 10, item 3: every level of the owned_result and borrowed_input axes
// is what execution does (docs/capabilities.md, "Execution axes"):
// Unsupported refuses with UnsupportedOpDType before any allocation or
// kernel; FallbackCopy runs the framework's copy path, counted by
// fallback_copy_count; Native hands the kernel the caller's own tensors,
// proven by pointer identity and an unchanged count. Before the fix nothing
// read owned_result or borrowed_input: an Unsupported owned_result still
// allocated and ran, and CPU claimed Native borrowed input while it copied
// hierarchical operands inside its kernel.
//
// Custom classes use indices 230 .. 249 of test_execution_axes.cpp's range
// (capability_test_support.h).
#include <gtest/gtest.h>

#include <vector>

#include "capability/capability_test_support.h"
#include "execution/kernel_table.h"
#include "support/expect_exactly.h"

namespace sw_caps {
namespace {

// A custom class whose one kernel, add(Float32, Float32), records the
// carriers it read and wrote.
template <int N>
struct Probe {
  static inline int calls = 0;
  static inline std::vector<const Carrier*> operands;
  static inline const Carrier* output = nullptr;
  static void add_kernel(const KernelCall& call) {
    ++calls;
    operands = {call.tensor(0).carrier().get(), call.tensor(1).carrier().get()};
    output = call.output.carrier().get();
    auto& out = const_cast<ValueCarrier&>(static_cast<const ValueCarrier&>(*call.output.carrier()));
    for (std::int64_t k = 0; k < call.output.size(); ++k)
      out.poke(call.output.offset() + call.output.layout()(k),
               Value::from_float32(call.tensor(0).at_ordinal(k).f + call.tensor(1).at_ordinal(k).f));
  }
  static void install(SupportLevel owned, SupportLevel borrowed, KernelTable::InPlaceReader reader = nullptr) {
    ExecutionAxes axes;
    axes.owned_result = owned;
    axes.borrowed_input = borrowed;
    axes.caller_output = SupportLevel::Native;
    axes.strided_output = SupportLevel::Native;
    axes.accumulation = SupportLevel::Native;
    KernelTable table;
    table.add(f32_add_plan(), add_kernel, axes);
    table.set_in_place_reader(reader);
    register_kernel_table(Custom<N>::cls(), std::move(table));
  }
  static void reset() {
    calls = 0;
    operands.clear();
    output = nullptr;
    Custom<N>::allocations = 0;
  }
  static Tensor compact(std::initializer_list<float> v) {
    return Tensor(Custom<N>::make(DType::Float32(), f32_values(v)), Shape{static_cast<std::int64_t>(v.size())});
  }
  // Logical [1, 2, 3] in slots 1, 3, 5 of a 7-slot carrier.
  static Tensor strided() {
    return Tensor(Custom<N>::make(DType::Float32(), f32_values({-1, 1, -1, 2, -1, 3, -1})), Shape{7}).slice(0, 1, 7, 2);
  }
};

std::vector<float> floats(const Tensor& t) { return TypedTensor<float>(t).values(); }

std::uint64_t count(CarrierClass cls, ExecutionAxis axis) { return fallback_copy_count(cls, axis); }

void expect_refused(const std::function<void()>& f, ExecutionAxis axis) {
  try {
    f();
    ADD_FAILURE() << "an Unsupported " << name_of(axis) << " axis was accepted";
  } catch (const UnsupportedOpDType& e) {
    EXPECT_ERROR_TYPE_IS(e, UnsupportedOpDType);
    EXPECT_EQ(e.axis(), std::optional<ExecutionAxis>(axis));
    EXPECT_EQ(e.operation(), "add");
  }
}

// ---------------------------------------------------------------- owned_result

TEST(ExecutionAxes_OwnedResult, UnsupportedIsRefusedBeforeAllocationOrKernel) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  using P = Probe<230>;
  P::install(SupportLevel::Unsupported, SupportLevel::Native);
  const Tensor a = P::compact({1, 2, 3}), b = P::compact({10, 20, 30});
  P::reset();
  expect_refused([&] { add(a, b); }, ExecutionAxis::owned_result);
  EXPECT_EQ(P::calls, 0);
  EXPECT_EQ(Custom<230>::allocations.load(), 0);
  // A caller-provided output is the class's way to run the plan.
  const Tensor out = P::compact({0, 0, 0});
  add(a, b, into(out));
  EXPECT_EQ(floats(out), (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(P::output, out.carrier().get());
}

TEST(ExecutionAxes_OwnedResult, FallbackCopyMaterialisesTheResultThroughTheCountedCopy) {
  using P = Probe<231>;
  P::install(SupportLevel::FallbackCopy, SupportLevel::Native);
  const Tensor a = P::compact({1, 2, 3}), b = P::compact({10, 20, 30});
  P::reset();
  const std::uint64_t before = count(Custom<231>::cls(), ExecutionAxis::owned_result);
  const Tensor r = add(a, b);
  EXPECT_EQ(floats(r), (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(count(Custom<231>::cls(), ExecutionAxis::owned_result), before + 1);
  EXPECT_EQ(P::calls, 1);
  EXPECT_NE(P::output, r.carrier().get()) << "the kernel wrote a temporary, the framework copied it";
  EXPECT_EQ(Custom<231>::allocations.load(), 2);
}

TEST(ExecutionAxes_OwnedResult, NativeResultIsTheStorageTheKernelWrote) {
  using P = Probe<232>;
  P::install(SupportLevel::Native, SupportLevel::Native);
  const Tensor a = P::compact({1, 2, 3}), b = P::compact({10, 20, 30});
  P::reset();
  const Tensor r = add(a, b);
  EXPECT_EQ(P::output, r.carrier().get());
  EXPECT_EQ(Custom<232>::allocations.load(), 1);
  EXPECT_EQ(count(Custom<232>::cls(), ExecutionAxis::owned_result), 0u);
}

// ---------------------------------------------------------------- borrowed_input

TEST(ExecutionAxes_BorrowedInput, UnsupportedRefusesAViewOperandBeforeAllocation) {
  using P = Probe<233>;
  P::install(SupportLevel::Native, SupportLevel::Unsupported);
  const Tensor a = P::compact({1, 2, 3}), view = P::strided();
  P::reset();
  expect_refused([&] { add(a, view); }, ExecutionAxis::borrowed_input);
  expect_refused([&] { add(view, a); }, ExecutionAxis::borrowed_input);
  const Tensor out = P::compact({0, 0, 0});
  expect_refused([&] { add(view, a, into(out)); }, ExecutionAxis::borrowed_input);
  EXPECT_EQ(P::calls, 0);
  EXPECT_EQ(Custom<233>::allocations.load(), 0);
  EXPECT_EQ(out.carrier()->version(), 0u);
  // Compact operands are accepted, and read in place.
  const Tensor b = P::compact({10, 20, 30});
  EXPECT_EQ(floats(add(a, b)), (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(P::operands, (std::vector<const Carrier*>{a.carrier().get(), b.carrier().get()}));
}

bool compact_only(const Layout& layout) { return layout.is_compact(); }

TEST(ExecutionAxes_BorrowedInput, FallbackCopyCopiesExactlyTheOperandsTheClassCannotReadInPlace) {
  using P = Probe<234>;
  P::install(SupportLevel::Native, SupportLevel::FallbackCopy, &compact_only);
  const Tensor a = P::compact({10, 20, 30}), view = P::strided();
  const CarrierClass cls = Custom<234>::cls();
  P::reset();
  const std::uint64_t before = count(cls, ExecutionAxis::borrowed_input);
  const Tensor r = add(a, view);
  EXPECT_EQ(floats(r), (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(count(cls, ExecutionAxis::borrowed_input), before + 1);
  ASSERT_EQ(P::operands.size(), 2u);
  EXPECT_EQ(P::operands[0], a.carrier().get()) << "a compact operand is read in place";
  EXPECT_NE(P::operands[1], view.carrier().get()) << "the view is read from the framework's copy";
  EXPECT_EQ(Custom<234>::allocations.load(), 2) << "one copy, one result";
  // Autograd and the caller still see the caller's operands unchanged.
  EXPECT_EQ(view.carrier()->version(), 0u);
  // Compact operands only: no copy.
  P::reset();
  add(a, a);
  EXPECT_EQ(count(cls, ExecutionAxis::borrowed_input), before + 1);
}

TEST(ExecutionAxes_BorrowedInput, NativeHandsEveryViewToTheKernelAsItIs) {
  using P = Probe<235>;
  P::install(SupportLevel::Native, SupportLevel::Native, &compact_only);  // the reader is not consulted
  const Tensor a = P::compact({10, 20, 30}), view = P::strided();
  P::reset();
  EXPECT_EQ(floats(add(view, a)), (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(P::operands, (std::vector<const Carrier*>{view.carrier().get(), a.carrier().get()}));
  EXPECT_EQ(count(Custom<235>::cls(), ExecutionAxis::borrowed_input), 0u);
}

// The shipped claims, told apart by the count: Generic reads every view in
// place (Native); CPU reads plain strided views in place and copies an
// operand with a hierarchical mode that does not coalesce (FallbackCopy).
Tensor hierarchical(const std::shared_ptr<Carrier>& storage) {
  // Axis 0 is the nested mode (2,2):(1,6); axis 1 has stride 2.
  return Tensor(storage, 0,
                Layout(Shape(std::vector<IntTuple>{IntTuple{2, 2}, IntTuple(3)}),
                       Stride(std::vector<IntTuple>{IntTuple{1, 6}, IntTuple(2)})));
}

std::vector<Value> twelve() {
  std::vector<Value> v;
  for (int i = 0; i < 12; ++i) v.push_back(Value::from_float32(static_cast<float>(i)));
  return v;
}

TEST(ExecutionAxes_BorrowedInput, ShippedClaimsAreWhatExecutionDoes) {
  for (const ShippedCarrier& c : shipped_carriers()) {
    SCOPED_TRACE(std::string(c.name));
    const OperationCapability cap = require_capability(c.cls, f32_add_plan());
    const Tensor h = hierarchical(c.make(twelve(), DType::Float32()));
    const Tensor plain = Tensor(c.make(twelve(), DType::Float32()), Shape{4, 3});
    const Tensor strided = Tensor(c.make(twelve(), DType::Float32()), Shape{3, 4}).permute({1, 0});
    const std::uint64_t before = count(c.cls, ExecutionAxis::borrowed_input);
    // Same logical values through every view kind.
    std::vector<Value> want;
    for (std::int64_t k = 0; k < 12; ++k)
      want.push_back(Value::from_float32(h.at_ordinal(k).f + plain.at_ordinal(k).f));
    EXPECT_EQ(add(h, plain).values(), want);
    const std::uint64_t after_hierarchical = count(c.cls, ExecutionAxis::borrowed_input);
    add(strided, plain);
    const std::uint64_t after_strided = count(c.cls, ExecutionAxis::borrowed_input);
    EXPECT_EQ(after_strided, after_hierarchical) << "a plain strided view is read in place";
    const SupportLevel borrowed = execution_axes(c.cls, cap).borrowed_input;
    if (borrowed == SupportLevel::Native) {
      EXPECT_EQ(after_hierarchical, before) << "Native: the hierarchical view reached the kernel as it is";
    } else if (borrowed == SupportLevel::FallbackCopy) {
      EXPECT_EQ(after_hierarchical, before + 1) << "FallbackCopy: the framework copied the hierarchical view";
    }
  }
  const OperationCapability add = OperationCapability::from_plan(f32_add_plan());
  EXPECT_EQ(execution_axes(carrier_class<Generic>(), add).borrowed_input, SupportLevel::Native);
  EXPECT_EQ(execution_axes(carrier_class<CPU>(), add).borrowed_input, SupportLevel::FallbackCopy);
}

// ---------------------------------------------------------------- outputs are counted too

TEST(ExecutionAxes_OutputCounts, FallbackCopyOutputsAreCountedAndNativeOnesAreNot) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  for (const ShippedCarrier& c : shipped_carriers()) {
    SCOPED_TRACE(std::string(c.name));
    const Tensor f = Tensor(c.make(twelve(), DType::Float32()), Shape{12});
    const Tensor out = Tensor(c.make(twelve(), DType::Float32()), Shape{12});
    const std::uint64_t caller = count(c.cls, ExecutionAxis::caller_output);
    const std::uint64_t rmw = count(c.cls, ExecutionAxis::accumulation);
    add(f, f, into(out));  // Native caller_output for add(Float32, Float32)
    EXPECT_EQ(count(c.cls, ExecutionAxis::caller_output), caller);
    add(f, f, accumulate_into(out));  // Generic: FallbackCopy accumulation; CPU: Native (issue 20)
    EXPECT_EQ(count(c.cls, ExecutionAxis::accumulation), rmw + (c.cls == carrier_class<CPU>() ? 0 : 1));
    std::vector<Value> ints;
    for (int i = 0; i < 4; ++i) ints.push_back(Value::from_int32(i));
    const Tensor i = Tensor(c.make(ints, DType::Int32()), Shape{4});
    const Tensor iout = Tensor(c.make(ints, DType::Int32()), Shape{4});
    add(i, i, into(iout));  // checked Int32: FallbackCopy caller_output
    EXPECT_EQ(count(c.cls, ExecutionAxis::caller_output), caller + 1);
    EXPECT_EQ(TypedTensor<std::int32_t>(iout).values(), (std::vector<std::int32_t>{0, 2, 4, 6}));
  }
}

}  // namespace
}  // namespace sw_caps
