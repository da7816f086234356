// Storage in ranges (issue 20, step 2; docs/storage.md "Ranges",
// docs/extension.md "Ranges"): the carrier's range operations and hooks, a
// StorageProvider's range callbacks, and their users (fallback copies,
// caller outputs, CPU's native accumulation, moves). Suite name =
// requirement, test name = rule.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <vector>

#include "storage/ranges.h"

namespace {

using namespace strideweave;
namespace ext = strideweave::extension;

std::vector<Value> floats(std::initializer_list<float> fs) {
  std::vector<Value> out;
  for (float f : fs) out.push_back(Value::from_float32(f));
  return out;
}
std::vector<Value> ints(std::initializer_list<std::int32_t> is) {
  std::vector<Value> out;
  for (std::int32_t i : is) out.push_back(Value::from_int32(i));
  return out;
}
std::vector<Value> iota_floats(std::int64_t n, float start = 0.0f) {
  std::vector<Value> out;
  for (std::int64_t i = 0; i < n; ++i) out.push_back(Value::from_float32(start + static_cast<float>(i)));
  return out;
}

// A carrier with per-slot hooks only (no range hooks, no host memory), which
// counts its hook calls and can fail its n-th write.
class SlotOnly final : public Carrier {
 public:
  SlotOnly(const SimpleDType& dtype, std::vector<Value> values, bool mutable_ = true)
      : Carrier(dtype, mutable_), values_(std::move(values)) {}
  static std::shared_ptr<SlotOnly> of(std::vector<Value> values, const SimpleDType& d = DType::Float32()) {
    return std::make_shared<SlotOnly>(d, std::move(values));
  }
  bool supports_storage_dtype(const DType& d) const noexcept override { return stored_element_kind(d).has_value(); }
  mutable int reads = 0;
  int writes = 0;
  int fail_at_write = -1;  // the write (0-based, counted from now) that throws
  const std::vector<Value>& raw() const { return values_; }

 protected:
  std::int64_t storage_size() const noexcept override { return static_cast<std::int64_t>(values_.size()); }
  Value read_slot(std::int64_t i) const override {
    ++reads;
    return values_[static_cast<std::size_t>(i)];
  }
  void write_slot(std::int64_t i, const Value& v) override {
    if (fail_at_write == 0) {
      fail_at_write = -1;
      throw OSError("SlotOnly: injected write failure", 5, "", std::nullopt);
    }
    if (fail_at_write > 0) --fail_at_write;
    ++writes;
    values_[static_cast<std::size_t>(i)] = v;
  }
  void release_storage() noexcept override { values_.clear(); }
  std::shared_ptr<Carrier> make_like(std::int64_t size, bool mutable_, const SimpleDType& dtype, bool) const override {
    return std::make_shared<SlotOnly>(dtype, std::vector<Value>(static_cast<std::size_t>(size), *storage_zero(dtype)),
                                      mutable_);
  }

 private:
  std::vector<Value> values_;
};

// ---------------------------------------------------------------- hooks' defaults

TEST(Storage_RangeHookDefaults, ACarrierWithOnlyPerSlotHooksWorksThroughTheRangeApi) {
  auto c = SlotOnly::of(iota_floats(6));
  EXPECT_EQ(c->read_values(1, 3), floats({1, 2, 3}));
  EXPECT_EQ(c->reads, 3);  // the default read_range goes slot by slot
  EXPECT_EQ(c->version(), 0u);  // a read is not a mutation
  c->write_values(2, floats({20, 30}));
  EXPECT_EQ(c->writes, 2);
  EXPECT_EQ(c->version(), 1u);  // one versioned mutation for the run
  EXPECT_EQ(c->read_values(0, 6), floats({0, 1, 20, 30, 4, 5}));
  auto src = SlotOnly::of(floats({7, 8, 9}));
  c->copy_range(*src, 0, 3, 3);
  EXPECT_EQ(c->version(), 2u);
  EXPECT_EQ(src->version(), 0u);  // the source is only read
  EXPECT_EQ(c->read_values(0, 6), floats({0, 1, 20, 7, 8, 9}));
  // Empty runs are allowed at either end.
  EXPECT_TRUE(c->read_values(6, 0).empty());
  EXPECT_TRUE(c->read_values(0, 0).empty());
}

TEST(Storage_RangeHookDefaults, TensorValuesReadRunByRun) {
  // A 2x3 row-major view (first mode fastest: strides (3,1) is rows of 3
  // contiguous slots after the permute): values() keeps logical order.
  auto c = Generic::create(iota_floats(6), DType::Float32());
  const Tensor t(c, 0, Layout(Shape{3, 2}, Stride{1, 3}));
  EXPECT_EQ(t.values(), floats({0, 1, 2, 3, 4, 5}));
  const std::int64_t perm[] = {1, 0};
  EXPECT_EQ(t.permute(perm).values(), floats({0, 3, 1, 4, 2, 5}));
}

TEST(Storage_RangeHookDefaults, ForEachRunYieldsMaximalContiguousRunsInLogicalOrder) {
  struct Run {
    std::int64_t ordinal, index, length;
    bool operator==(const Run&) const = default;
  };
  auto runs = [](const Layout& l) {
    std::vector<Run> out;
    detail::for_each_run(l, [&](std::int64_t o, std::int64_t i, std::int64_t n) { out.push_back({o, i, n}); });
    return out;
  };
  EXPECT_EQ(runs(Layout::compact(Shape{4, 3})), (std::vector<Run>{{0, 0, 12}}));
  // Rows of 2 contiguous slots, 5 apart.
  EXPECT_EQ(runs(Layout(Shape{2, 3}, Stride{1, 5})), (std::vector<Run>{{0, 0, 2}, {2, 5, 2}, {4, 10, 2}}));
  // Fastest mode not unit-stride: runs of one slot.
  EXPECT_EQ(runs(Layout(Shape{3}, Stride{2})), (std::vector<Run>{{0, 0, 1}, {1, 2, 1}, {2, 4, 1}}));
  // Broadcast: the same slot again.
  EXPECT_EQ(runs(Layout(Shape{2}, Stride{0})), (std::vector<Run>{{0, 0, 1}, {1, 0, 1}}));
  EXPECT_TRUE(runs(Layout::compact(Shape{0, 3})).empty());
  EXPECT_EQ(runs(Layout()), (std::vector<Run>{{0, 0, 1}}));
}

// ---------------------------------------------------------------- checks

TEST(Storage_RangeChecks, BadRunsRaiseTypedErrorsAndChangeNothing) {
  auto c = Generic::create(iota_floats(4), DType::Float32());
  auto int_carrier = Generic::create(ints({1, 2}), DType::Int32());
  EXPECT_THROW(c->read_values(0, -1), ValueError);
  EXPECT_THROW(c->read_values(3, 2), IndexError);
  EXPECT_THROW(c->read_values(-1, 1), IndexError);
  EXPECT_THROW(c->write_values(3, floats({1, 2})), IndexError);
  EXPECT_THROW(c->write_values(0, std::vector<Value>{Value::from_int32(1)}), TypeError);
  EXPECT_THROW(c->copy_range(*int_carrier, 0, 0, 2), TypeError);
  EXPECT_THROW(c->copy_range(*c, 0, 0, -1), ValueError);
  EXPECT_THROW(c->copy_range(*c, 3, 0, 2), IndexError);
  EXPECT_THROW(c->copy_range(*c, 0, 3, 2), IndexError);
  EXPECT_EQ(c->version(), 0u);
  EXPECT_EQ(c->read_values(0, 4), iota_floats(4));
  auto frozen = Generic::create(iota_floats(2), DType::Float32(), /*mutable_=*/false);
  EXPECT_THROW(frozen->write_values(0, floats({9})), RuntimeError);
  EXPECT_THROW(frozen->copy_range(*c, 0, 0, 1), RuntimeError);
  auto gone = Generic::create(iota_floats(2), DType::Float32());
  gone->release();
  EXPECT_THROW(gone->read_values(0, 1), RuntimeError);
  EXPECT_THROW(gone->write_values(0, floats({1})), RuntimeError);
  EXPECT_THROW(c->copy_range(*gone, 0, 0, 1), RuntimeError);
  EXPECT_EQ(c->version(), 0u);
}

TEST(Storage_RangeChecks, OverlappingCopyWithinOneCarrierBehavesAsIfTheSourceWereReadFirst) {
  for (std::shared_ptr<Carrier> c : {std::shared_ptr<Carrier>(CPU::from_values(iota_floats(6), DType::Float32())),
                                     std::shared_ptr<Carrier>(Generic::create(iota_floats(6), DType::Float32())),
                                     std::shared_ptr<Carrier>(SlotOnly::of(iota_floats(6)))}) {
    SCOPED_TRACE(c->class_name());
    c->copy_range(*c, 0, 2, 4);
    EXPECT_EQ(c->read_values(0, 6), floats({0, 1, 0, 1, 2, 3}));
    c->copy_range(*c, 2, 0, 4);
    EXPECT_EQ(c->read_values(0, 6), floats({0, 1, 2, 3, 2, 3}));
    EXPECT_EQ(c->version(), 2u);
  }
}

TEST(Storage_RangeChecks, CopiesBetweenHostMemoryAndHookCarriersAgree) {
  auto cpu = CPU::from_values(iota_floats(5), DType::Float32());
  auto slots = SlotOnly::of(iota_floats(5, 10));
  cpu->copy_range(*slots, 1, 0, 3);  // hooks -> host memory
  EXPECT_EQ(cpu->read_values(0, 5), floats({11, 12, 13, 3, 4}));
  slots->copy_range(*cpu, 0, 2, 3);  // host memory -> hooks
  EXPECT_EQ(slots->read_values(0, 5), floats({10, 11, 11, 12, 13}));
  auto cpu2 = CPU::create(5, DType::Float32());
  cpu2->copy_range(*cpu, 0, 0, 5);  // host -> host (memmove)
  EXPECT_EQ(cpu2->read_values(0, 5), cpu->read_values(0, 5));
  EXPECT_EQ(cpu2->version(), 1u);
}

// ---------------------------------------------------------------- failure atomicity

TEST(Storage_RangeFailureAtomicity, AWriteThatFailsMidwayPublishesNothingAndKeepsTheVersion) {
  auto c = SlotOnly::of(iota_floats(5));
  c->fail_at_write = 2;  // the third slot's write throws
  EXPECT_THROW(c->write_values(0, floats({10, 11, 12, 13})), OSError);
  EXPECT_EQ(c->raw(), iota_floats(5));  // the two written slots were written back
  EXPECT_EQ(c->version(), 0u);
  c->fail_at_write = 1;
  auto src = Generic::create(iota_floats(3, 50), DType::Float32());
  EXPECT_THROW(c->copy_range(*src, 0, 1, 3), OSError);
  EXPECT_EQ(c->raw(), iota_floats(5));
  EXPECT_EQ(c->version(), 0u);
}

TEST(Storage_RangeFailureAtomicity, ACallerOutputPublicationThatFailsMidwayRestoresTheOutput) {
  // publish_result (the caller-output fallback of src/frontend/dispatch.cpp)
  // on a strided output whose write fails in its second run.
  auto out = SlotOnly::of(iota_floats(6));
  const Tensor target(out, 0, Layout(Shape{2, 2}, Stride{1, 3}));  // runs {0,1} and {3,4}
  const Tensor fresh(Generic::create(floats({10, 11, 12, 13}), DType::Float32()), Shape{4});
  out->fail_at_write = 3;
  EXPECT_THROW(detail::publish_result(fresh, target, target.layout(), false, "add"), OSError);
  EXPECT_EQ(out->raw(), iota_floats(6));
  EXPECT_EQ(out->version(), 0u);
  detail::publish_result(fresh, target, target.layout(), true, "add");
  EXPECT_EQ(out->raw(), floats({10, 12, 2, 15, 17, 5}));
  EXPECT_EQ(out->version(), 1u);
}

TEST(Storage_RangeFailureAtomicity, Int32AccumulationOverflowInThePublicationWritesNothing) {
  auto out = SlotOnly::of(ints({1, std::numeric_limits<std::int32_t>::max()}), DType::Int32());
  const Tensor target(out, Shape{2});
  const Tensor fresh(Generic::create(ints({1, 1}), DType::Int32()), Shape{2});
  try {
    detail::publish_result(fresh, target, target.layout(), true, "add");
    FAIL() << "no OverflowError";
  } catch (const OverflowError& e) {
    EXPECT_NE(std::string(e.what()).find("accumulating into the Int32 output: element 1"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(out->writes, 0);
  EXPECT_EQ(out->version(), 0u);
}

// ---------------------------------------------------------------- shipped classes

TEST(Storage_ShippedRanges, FileBackedRunsCrossResidencyWindows) {
  // A 4 KiB window is 1024 slots: the run crosses three windows.
  auto f = FileBacked::create(std::nullopt, DType::Float32(), true, 4096, 4096);
  const std::vector<Value> values = iota_floats(2500, 1);
  f->write_values(700, values);
  EXPECT_EQ(f->version(), 1u);
  EXPECT_EQ(f->read_values(700, 2500), values);
  EXPECT_EQ(f->get_value(699), Value::from_float32(0));
  EXPECT_EQ(f->get_value(3200), Value::from_float32(0));
  EXPECT_EQ(f->get_value(1723), Value::from_float32(1024));
}

TEST(Storage_ShippedRanges, CpuRangesAreItsHostMemory) {
  auto c = CPU::from_values(ints({1, 2, 3}), DType::Int32());
  const HostSpan h = detail::RangeAccess::host(*c);
  ASSERT_TRUE(h);
  EXPECT_EQ(h.data, static_cast<void*>(c->template data<std::int32_t>()));
  EXPECT_EQ(h.dtype, &DType::Int32());
  EXPECT_EQ(h.size, 3);
  c->write_values(1, ints({7}));
  EXPECT_EQ(c->template data<std::int32_t>()[1], 7);
  c->release();
  EXPECT_FALSE(detail::RangeAccess::host(*c));  // released: no host memory
  EXPECT_FALSE(detail::RangeAccess::host(*Generic::create(iota_floats(1), DType::Float32())));
}

// ---------------------------------------------------------------- StorageProvider range callbacks

struct RangeCounters {
  std::atomic<int> read{0}, write{0}, read_range{0}, write_range{0}, host{0};
};

template <int N>
class RangedArena final : public ext::DefinedCarrier {
 public:
  explicit RangedArena(ext::Construction key) : DefinedCarrier(std::move(key)) {}
  std::vector<Value> slots;
  std::vector<float> host;  // the host_data variant's memory
  static RangeCounters counters;
};
template <int N>
RangeCounters RangedArena<N>::counters;

// mode 0: per slot only; 1: read_range/write_range; 2: host_data (Float32).
template <int N>
ext::StorageProvider ranged_storage(int mode) {
  using A = RangedArena<N>;
  ext::StorageProvider p(
      [](const Carrier&, const DType& d) { return &d == &DType::Float32() || &d == &DType::Int32(); },
      [](const Carrier& c) { return static_cast<std::int64_t>(static_cast<const A&>(c).slots.size()); },
      [](Carrier& c, std::int64_t n) {
        auto& a = static_cast<A&>(c);
        a.slots.assign(static_cast<std::size_t>(n), *storage_zero(a.dtype()));
        a.host.assign(static_cast<std::size_t>(n), 0.0f);
      },
      [](Carrier& c) { static_cast<A&>(c).slots.clear(); },
      [](const Carrier& c, std::int64_t i) {
        ++A::counters.read;
        const auto& a = static_cast<const A&>(c);
        return a.host.empty() || &a.dtype() != &DType::Float32() ? a.slots[static_cast<std::size_t>(i)]
                                                                 : Value::from_float32(a.host[static_cast<std::size_t>(i)]);
      },
      [](Carrier& c, std::int64_t i, const Value& v) {
        ++A::counters.write;
        auto& a = static_cast<A&>(c);
        a.slots[static_cast<std::size_t>(i)] = v;
        if (v.kind == ElementKind::Float32) a.host[static_cast<std::size_t>(i)] = v.f;
      },
      /*elementwise_fallback=*/true);
  if (mode == 1)
    return p.with_ranges(
        [](const Carrier& c, std::int64_t first, std::span<Value> out) {
          ++A::counters.read_range;
          const auto& a = static_cast<const A&>(c);
          std::copy_n(a.slots.begin() + first, out.size(), out.begin());
        },
        [](Carrier& c, std::int64_t first, std::span<const Value> values) {
          ++A::counters.write_range;
          auto& a = static_cast<A&>(c);
          std::copy(values.begin(), values.end(), a.slots.begin() + first);
        });
  if (mode == 2)
    return p.with_ranges(nullptr, nullptr, [](const Carrier& c) -> void* {
      ++A::counters.host;
      return const_cast<float*>(static_cast<const A&>(c).host.data());
    });
  return p;
}

TEST(Extension_StorageRanges, RangeCallbacksReplaceThePerSlotCallbacks) {
  using A = RangedArena<2001>;
  ext::register_carrier_definition(carrier_class<A>(), ext::CarrierDefinition(ranged_storage<2001>(1)));
  auto c = ext::create<A>(6, DType::Float32());
  c->write_values(0, iota_floats(6));
  EXPECT_EQ(c->read_values(1, 4), floats({1, 2, 3, 4}));
  const Tensor t(c, 0, Layout(Shape{2, 2}, Stride{1, 3}));
  EXPECT_EQ(t.values(), floats({0, 1, 3, 4}));
  auto other = ext::create<A>(3, DType::Float32());
  other->copy_range(*c, 3, 0, 3);
  EXPECT_EQ(other->read_values(0, 3), floats({3, 4, 5}));
  auto fresh = c->new_like(floats({8, 9}));
  EXPECT_EQ(fresh->read_values(0, 2), floats({8, 9}));
  EXPECT_EQ(A::counters.read.load(), 0);   // never per slot
  EXPECT_EQ(A::counters.write.load(), 0);
  EXPECT_GT(A::counters.read_range.load(), 0);
  EXPECT_GT(A::counters.write_range.load(), 0);
  // The hook's before-image and write, for a versioned write: still ranges.
  EXPECT_EQ(c->version(), 1u);
  EXPECT_EQ(other->version(), 1u);
}

TEST(Extension_StorageRanges, AProviderWithoutRangeCallbacksKeepsWorkingPerSlot) {
  using A = RangedArena<2002>;
  ext::register_carrier_definition(carrier_class<A>(), ext::CarrierDefinition(ranged_storage<2002>(0)));
  auto c = ext::create<A>(4, DType::Float32());
  c->write_values(1, floats({5, 6}));
  EXPECT_EQ(c->read_values(0, 4), floats({0, 5, 6, 0}));
  EXPECT_EQ(A::counters.write.load(), 2);
  EXPECT_GE(A::counters.read.load(), 4);
  EXPECT_EQ(c->version(), 1u);
}

TEST(Extension_StorageRanges, HostDataMakesRunsMemoryCopiesWithoutAnySlotOrRangeCallback) {
  using A = RangedArena<2003>;
  ext::register_carrier_definition(carrier_class<A>(), ext::CarrierDefinition(ranged_storage<2003>(2)));
  auto c = ext::create<A>(5, DType::Float32());
  c->write_values(0, iota_floats(5, 1));
  EXPECT_EQ(c->host, (std::vector<float>{1, 2, 3, 4, 5}));
  EXPECT_EQ(c->read_values(2, 3), floats({3, 4, 5}));
  auto cpu = CPU::create(5, DType::Float32());
  cpu->copy_range(*c, 0, 0, 5);  // host -> host: one memmove
  EXPECT_EQ(cpu->read_values(0, 5), iota_floats(5, 1));
  EXPECT_EQ(A::counters.read.load(), 0);
  EXPECT_EQ(A::counters.write.load(), 0);
  EXPECT_GT(A::counters.host.load(), 0);
}

TEST(Extension_StorageRanges, AReadRangeOfTheWrongKindIsATypeError) {
  using A = RangedArena<2004>;
  ext::StorageProvider base = ranged_storage<2004>(0);
  ext::register_carrier_definition(
      carrier_class<A>(), ext::CarrierDefinition(base.with_ranges(
                              [](const Carrier&, std::int64_t, std::span<Value> out) {
                                for (Value& v : out) v = Value::from_int32(1);
                              },
                              nullptr)));
  auto c = ext::create<A>(2, DType::Float32());
  EXPECT_THROW(c->read_values(0, 2), TypeError);
}

// ---------------------------------------------------------------- CPU accumulation is Native

TEST(CPU_NativeAccumulation, ElementwiseArithmeticDeclaresNativeAccumulation) {
  const CarrierClass cpu = carrier_class<CPU>();
  for (const auto& [op, dtype] : std::vector<std::pair<const char*, const DType*>>{
           {"add", &DType::Float32()}, {"sub", &DType::Float32()}, {"mul", &DType::Float32()},
           {"div", &DType::Float32()}, {"add", &DType::Int32()}, {"maximum", &DType::Float32()}}) {
    const OperationPlan plan = resolve_operation_plan(op, {*dtype, *dtype});
    EXPECT_EQ(execution_axes(cpu, require_capability(cpu, plan)).accumulation, SupportLevel::Native) << op;
  }
  // Reductions keep the framework's accumulation.
  const OperationPlan sum = resolve_operation_plan("reduce_sum", {DType::Float32()});
  EXPECT_EQ(execution_axes(cpu, require_capability(cpu, sum)).accumulation, SupportLevel::FallbackCopy);
}

TEST(CPU_NativeAccumulation, AccumulateIntoAddsInPlaceWithoutAFallbackCopy) {
  const NoGradGuard no_graph;
  const CarrierClass cpu = carrier_class<CPU>();
  const std::uint64_t before = fallback_copy_count(cpu, ExecutionAxis::accumulation);
  const std::uint64_t strided_before = fallback_copy_count(cpu, ExecutionAxis::strided_output);
  const Tensor a(CPU::from_values(iota_floats(6, 1), DType::Float32()), Shape{6});
  const Tensor b(CPU::from_values(floats({0.5f, -1, 2, 0, -0.0f, 3}), DType::Float32()), Shape{6});
  const Tensor out(CPU::from_values(floats({10, 20, 30, 40, 50, 60}), DType::Float32()), Shape{6});
  const Tensor r = add(a, b, accumulate_into(out));
  EXPECT_EQ(r.carrier(), out.carrier());
  EXPECT_EQ(out.values(), floats({11.5f, 21, 35, 44, 55, 69}));
  EXPECT_EQ(out.carrier()->version(), 1u);
  mul(a, 2.0f, accumulate_into(out));  // a weak scalar operand
  EXPECT_EQ(out.values(), floats({13.5f, 25, 41, 52, 65, 81}));
  // A strided output (every other slot): still Native (strided_output Native).
  const Tensor wide(CPU::from_values(iota_floats(12), DType::Float32()), Shape{12});
  const Tensor every_other = wide.slice(0, 0, 12, 2);
  sub(a, b, accumulate_into(every_other));
  EXPECT_EQ(wide.values(), floats({0.5f, 1, 5, 3, 5, 5, 10, 7, 13, 9, 13, 11}));
  EXPECT_EQ(fallback_copy_count(cpu, ExecutionAxis::accumulation), before);
  EXPECT_EQ(fallback_copy_count(cpu, ExecutionAxis::strided_output), strided_before);
}

TEST(CPU_NativeAccumulation, NativeAccumulationMatchesTheFrameworksFallbackBitForBit) {
  // Generic still accumulates through the framework's copy: the reference.
  const NoGradGuard no_graph;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<Value> xs = floats({1e30f, -0.0f, nan, inf, 3.5f, 1e-40f, -2, 7, 0.1f});
  const std::vector<Value> ys = floats({1e30f, 0.0f, 1, -inf, nan, 1e-40f, 0.3f, -7, 0.2f});
  const std::vector<Value> old = floats({-inf, -0.0f, 2, 1, 1, -1e-40f, nan, 0, 0.3f});
  using Binary = Tensor (*)(const Tensor&, const Tensor&, const Output&);
  const std::pair<const char*, Binary> ops[] = {{"add", &add}, {"sub", &sub},         {"mul", &mul},
                                                {"div", &div}, {"maximum", &maximum}, {"pow", &pow}};
  for (const auto& [op, fn] : ops) {
    SCOPED_TRACE(op);
    auto run = [&](auto make) {
      const Tensor x(make(xs), Shape{9}), y(make(ys), Shape{9}), out(make(old), Shape{9});
      fn(x, y, accumulate_into(out));
      return out.values();
    };
    const auto on_cpu = run([](const std::vector<Value>& v) { return CPU::from_values(v, DType::Float32()); });
    const auto on_generic = run([](const std::vector<Value>& v) { return Generic::create(v, DType::Float32()); });
    ASSERT_EQ(on_cpu.size(), on_generic.size());
    for (std::size_t k = 0; k < on_cpu.size(); ++k) EXPECT_EQ(on_cpu[k], on_generic[k]) << k;
  }
}

TEST(CPU_NativeAccumulation, Int32OverflowRaisesTheFallbacksErrorAndLeavesOutUnchanged) {
  const NoGradGuard no_graph;
  const std::int32_t max = std::numeric_limits<std::int32_t>::max();
  for (bool cpu : {true, false}) {
    SCOPED_TRACE(cpu ? "CPU (native)" : "Generic (fallback)");
    auto make = [&](std::initializer_list<std::int32_t> v) -> std::shared_ptr<Carrier> {
      if (cpu) return CPU::from_values(ints(v), DType::Int32());
      return Generic::create(ints(v), DType::Int32());
    };
    const std::uint64_t before = fallback_copy_count(carrier_class<CPU>(), ExecutionAxis::accumulation);
    const Tensor a(make({1, 2, 3}), Shape{3}), b(make({1, 1, 1}), Shape{3});
    const Tensor out(make({0, max - 1, 5}), Shape{3});
    // The accumulation overflows at element 1 (max - 1 + 3).
    try {
      add(a, b, accumulate_into(out));
      FAIL() << "no OverflowError";
    } catch (const OverflowError& e) {
      EXPECT_EQ(std::string(e.what()),
                "add: accumulating into the Int32 output: element 1 (in logical order) would be outside "
                "[-2147483648, 2147483647]");
    }
    EXPECT_EQ(out.values(), ints({0, max - 1, 5}));
    EXPECT_EQ(out.carrier()->version(), 0u);
    // The operation's own overflow comes first, as from a fresh result.
    const Tensor big(make({max, 0, 0}), Shape{3});
    try {
      add(big, b, accumulate_into(out));
      FAIL() << "no OverflowError";
    } catch (const OverflowError& e) {
      EXPECT_NE(std::string(e.what()).find("the exact Int32 result of element 0"), std::string::npos) << e.what();
    }
    EXPECT_EQ(out.values(), ints({0, max - 1, 5}));
    EXPECT_EQ(out.carrier()->version(), 0u);
    add(a, b, accumulate_into(Tensor(make({1, 1, 1}), Shape{3})));
    EXPECT_EQ(fallback_copy_count(carrier_class<CPU>(), ExecutionAxis::accumulation), before);
  }
}

// ---------------------------------------------------------------- users: fallback copies and moves

TEST(Storage_RangeUsers, BorrowedOperandCopiesKeepLogicalOrder) {
  // A CPU operand with a nested mode that does not coalesce (CPU's
  // borrowed_input FallbackCopy): copied into a compact temporary run by run.
  const NoGradGuard no_graph;
  const Tensor base(CPU::from_values(iota_floats(24), DType::Float32()), Shape{24});
  const Tensor nested = base.as_strided(Layout(Shape{IntTuple{2, 3}}, Stride{IntTuple{1, 8}}), 0);
  const Tensor ones(CPU::from_values(floats({1, 1, 1, 1, 1, 1}), DType::Float32()), Shape{6});
  const std::uint64_t before = fallback_copy_count(carrier_class<CPU>(), ExecutionAxis::borrowed_input);
  const Tensor r = add(nested, ones);
  EXPECT_EQ(r.values(), floats({1, 2, 9, 10, 17, 18}));
  EXPECT_EQ(fallback_copy_count(carrier_class<CPU>(), ExecutionAxis::borrowed_input), before + 1);
}

TEST(Storage_RangeUsers, ElementwiseMovesGoRunByRunThroughTheRangeHooks) {
  // CPU -> a per-slot-only class: every value once through write_slot (the
  // default write_range); no registered route, so ElementwiseMoveOperation.
  const Tensor src(CPU::from_values(iota_floats(6), DType::Float32()), Shape{6});
  const std::int64_t perm[] = {1, 0};
  const Tensor view = src.reshape(Shape{2, 3}).permute(perm);
  auto dst = SlotOnly::of(iota_floats(6, 100));
  const std::vector<Value> expected = view.values();
  const Tensor moved = move(view, dst);  // releases the source
  EXPECT_EQ(moved.values(), expected);
  EXPECT_GE(dst->writes, 6);
  EXPECT_EQ(dst->version(), 1u);
  // And through a provider's range callbacks (both sides permit the
  // elementwise fallback): no per-slot callback.
  using A = RangedArena<2005>;
  ext::register_carrier_definition(carrier_class<A>(), ext::CarrierDefinition(ranged_storage<2005>(1)));
  auto arena = ext::create<A>(6, DType::Float32());
  const Tensor there = move(Tensor(CPU::from_values(iota_floats(6, 3), DType::Float32()), Shape{6}), arena);
  EXPECT_EQ(there.values(), iota_floats(6, 3));
  EXPECT_EQ(A::counters.write.load(), 0);
  EXPECT_EQ(A::counters.read.load(), 0);
  EXPECT_GT(A::counters.write_range.load(), 0);
}

TEST(Storage_RangeUsers, GradientAccumulationIntoAnExistingGradIsRight) {
  const Tensor x(CPU::from_values(floats({1, 2, 3}), DType::Float32()), Shape{3});
  reduce_sum(mul(x, x)).backward();
  reduce_sum(mul(x, 3.0f)).backward();
  ASSERT_TRUE(x.grad());
  EXPECT_EQ(x.grad()->values(), floats({5, 7, 9}));
}

}  // namespace
