// One move dispatcher by (source class, destination class) (issue 20, step
// 4; core-concepts.md 7.2-7.3; carrier-extension.md R5; docs/storage.md,
// "Routing"): every pair gets one route (a TransferRoute declared by the
// source definition, the definition-free registry's entry, or the framework's
// elementwise fallback, which copies host memory with memcpy and everything
// else through the range access), and the ordered checks and the
// transactional commit hold on each. Suite name = requirement, test name =
// rule.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using namespace strideweave;
namespace ext = strideweave::extension;

std::vector<Value> iota_floats(std::int64_t n, float start = 0.0f) {
  std::vector<Value> out;
  for (std::int64_t i = 0; i < n; ++i) out.push_back(Value::from_float32(start + static_cast<float>(i)));
  return out;
}

// ---------------------------------------------------------------- test carriers

// A definition-backed Float32 carrier whose storage is a host vector. Modes:
//   HostMemory   ranges + host_data, permits the elementwise fallback;
//   SlotsOnly    per-slot callbacks only, permits the fallback;
//   Device       no fallback; declares the route it -> CPU ("download")
//                on its own definition (R2.3: a definition's routes start at
//                its class);
//   Strict       no fallback, no routes.
enum class Mode { HostMemory, SlotsOnly, Device, Strict };

template <int N>
class Arena final : public ext::DefinedCarrier {
 public:
  explicit Arena(ext::Construction key) : DefinedCarrier(std::move(key)) {}
  std::vector<float> memory;
  static inline std::atomic<int> prepared{0}, submitted{0};
};

template <int N>
ext::StorageProvider arena_storage(Mode mode) {
  using A = Arena<N>;
  ext::StorageProvider p(
      [](const Carrier&, const DType& d) { return &d == &DType::Float32(); },
      [](const Carrier& c) { return static_cast<std::int64_t>(static_cast<const A&>(c).memory.size()); },
      [](Carrier& c, std::int64_t n) { static_cast<A&>(c).memory.assign(static_cast<std::size_t>(n), 0.0f); },
      [](Carrier& c) { static_cast<A&>(c).memory.clear(); },
      [](const Carrier& c, std::int64_t i) {
        return Value::from_float32(static_cast<const A&>(c).memory[static_cast<std::size_t>(i)]);
      },
      [](Carrier& c, std::int64_t i, const Value& v) { static_cast<A&>(c).memory[static_cast<std::size_t>(i)] = v.f; },
      /*elementwise_fallback=*/mode == Mode::HostMemory || mode == Mode::SlotsOnly);
  if (mode != Mode::HostMemory) return p;
  return p.with_ranges(nullptr, nullptr,
                       [](const Carrier& c) -> void* { return const_cast<float*>(static_cast<const A&>(c).memory.data()); });
}

// The device's route copies the physical span to a CPU destination with
// memcpy (CPU's host memory through its public data pointer; the route never
// versions or releases). Its transfer is deferred until the move waits, so a
// test can act while the transfer is in flight.
template <int N>
std::vector<ext::TransferRoute> device_routes() {
  using A = Arena<N>;
  auto download = ext::TransferProvider([](const ext::TransferRequest& r) -> ext::TransferProvider::Prepared {
    ++A::prepared;
    return ext::PreparedTransfer([r]() -> ext::TransferSubmission {
      ++A::submitted;
      return ext::ProviderCompletion<void>::deferred([r] {
        const auto& from = static_cast<const A&>(*r.tensor().carrier());
        auto& to = static_cast<CPU&>(*r.destination());
        if (to.is_released()) throw RuntimeError("download: the destination was released in flight");
        std::memcpy(to.data<float>(), from.memory.data() + r.tensor().offset(),
                    static_cast<std::size_t>(r.physical_span()) * sizeof(float));
      });
    });
  });
  return {ext::TransferRoute(carrier_class<A>(), carrier_class<CPU>(), "download", download)};
}

template <int N>
void register_arena(Mode mode) {
  ext::register_carrier_definition(
      carrier_class<Arena<N>>(),
      ext::CarrierDefinition(arena_storage<N>(mode), std::nullopt,
                             mode == Mode::Device ? device_routes<N>() : std::vector<ext::TransferRoute>{}));
}

// The definitions this suite uses, registered once.
using HostArena = Arena<4101>;
using SlotArena = Arena<4102>;
using Device = Arena<4103>;
using StrictArena = Arena<4104>;
void register_all() {
  static const bool once = [] {
    register_arena<4101>(Mode::HostMemory);
    register_arena<4102>(Mode::SlotsOnly);
    register_arena<4103>(Mode::Device);
    register_arena<4104>(Mode::Strict);
    return true;
  }();
  (void)once;
}

template <class A>
std::shared_ptr<A> arena_of(const std::vector<Value>& values) {
  auto a = ext::create<A>(static_cast<std::int64_t>(values.size()), DType::Float32());
  for (std::size_t i = 0; i < values.size(); ++i) a->memory[i] = values[i].f;
  return a;
}

// One case per route kind and copy path: how to make a source of `values`
// and a destination of `values` (both Float32).
struct RouteCase {
  std::string name;
  std::function<std::shared_ptr<Carrier>(const std::vector<Value>&)> source, destination;
  MoveRouteKind kind;
  MoveCopyPath copy;
  std::string route_name;
};

std::vector<RouteCase> route_cases() {
  register_all();
  auto cpu = [](const std::vector<Value>& v) -> std::shared_ptr<Carrier> { return CPU::from_values(v, DType::Float32()); };
  auto generic = [](const std::vector<Value>& v) -> std::shared_ptr<Carrier> {
    return Generic::from_values(v, DType::Float32());
  };
  auto host = [](const std::vector<Value>& v) -> std::shared_ptr<Carrier> { return arena_of<HostArena>(v); };
  auto slots = [](const std::vector<Value>& v) -> std::shared_ptr<Carrier> { return arena_of<SlotArena>(v); };
  auto device = [](const std::vector<Value>& v) -> std::shared_ptr<Carrier> { return arena_of<Device>(v); };
  using K = MoveRouteKind;
  using P = MoveCopyPath;
  return {
      {"CPU->CPU", cpu, cpu, K::ElementwiseFallback, P::HostMemory, "ElementwiseMoveOperation"},
      {"CPU->Generic", cpu, generic, K::ElementwiseFallback, P::Ranges, "ElementwiseMoveOperation"},
      {"Generic->CPU", generic, cpu, K::ElementwiseFallback, P::Ranges, "ElementwiseMoveOperation"},
      {"CPU->HostArena", cpu, host, K::ElementwiseFallback, P::HostMemory, "ElementwiseMoveOperation"},
      {"HostArena->CPU", host, cpu, K::ElementwiseFallback, P::HostMemory, "ElementwiseMoveOperation"},
      {"SlotArena->CPU", slots, cpu, K::ElementwiseFallback, P::Ranges, "ElementwiseMoveOperation"},
      {"Device->CPU", device, cpu, K::TransferRoute, P::Route, "download"},
  };
}

std::vector<Value> slots_of(const Carrier& c) { return c.read_values(0, c.size()); }

// ---------------------------------------------------------------- the dispatcher

TEST(MoveDispatch_Issue20Step4, EveryPairHasOneRouteByItsExactClasses) {
  for (const RouteCase& c : route_cases()) {
    SCOPED_TRACE(c.name);
    const auto from = c.source(iota_floats(4)), to = c.destination(iota_floats(4));
    const MoveRouteInfo info = describe_move_route(*from, *to);
    EXPECT_EQ(info.kind, c.kind);
    EXPECT_EQ(info.copy, c.copy);
    EXPECT_EQ(info.name, c.route_name);
  }
  // The definition-free registry's entries keep their names.
  auto cpu = CPU::from_values(iota_floats(4), DType::Float32());
  auto file = FileBacked::create(std::nullopt, DType::Float32());
  const MoveRouteInfo to_file = describe_move_route(*cpu, *file);
  EXPECT_EQ(to_file.kind, MoveRouteKind::MoveOperation);
  EXPECT_EQ(to_file.name, "CpuToFileBackedMoveOperation");
  EXPECT_EQ(to_file.copy, MoveCopyPath::Route);
  EXPECT_STREQ(to_string(MoveRouteKind::TransferRoute), "transfer_route");
  EXPECT_STREQ(to_string(MoveCopyPath::HostMemory), "host_memory");
}

TEST(MoveDispatch_Issue20Step4, ADefinitionBackedPairWithoutRouteOrPermissionIsNotImplementedBeforeAnyWork) {
  register_all();
  auto strict = arena_of<StrictArena>(iota_floats(4, 50));
  auto cpu = CPU::from_values(iota_floats(4), DType::Float32());
  EXPECT_THROW(describe_move_route(*cpu, *strict), NotImplementedError);
  EXPECT_THROW(describe_move_route(*strict, *cpu), NotImplementedError);
  const Tensor t(cpu, Shape{4});
  EXPECT_THROW(move(t, strict), NotImplementedError);
  EXPECT_FALSE(cpu->is_released());
  EXPECT_EQ(slots_of(*strict), iota_floats(4, 50));
  EXPECT_EQ(strict->version(), 0u);
}

TEST(MoveDispatch_Issue20Step4, TheSourceDefinitionsRouteRunsAndAPairItDoesNotDeclareIsRefused) {
  register_all();
  const int prepared = Device::prepared.load(), submitted = Device::submitted.load();
  auto device = arena_of<Device>(iota_floats(6, 1));
  auto host = CPU::create(6);
  const Tensor back = move(Tensor(device, Shape{6}), host);
  EXPECT_EQ(back.values(), iota_floats(6, 1));
  EXPECT_EQ(Device::prepared.load(), prepared + 1);
  EXPECT_EQ(Device::submitted.load(), submitted + 1);
  EXPECT_TRUE(device->is_released());
  EXPECT_EQ(host->version(), 1u);
  // Into the device: no route starts at CPU (a definition-free class) and the
  // device permits no fallback, so NotImplementedError before any work.
  auto into = arena_of<Device>(iota_floats(6, 40));
  auto cpu = CPU::from_values(iota_floats(6), DType::Float32());
  EXPECT_THROW(describe_move_route(*cpu, *into), NotImplementedError);
  EXPECT_THROW(move(Tensor(cpu, Shape{6}), into), NotImplementedError);
  EXPECT_FALSE(cpu->is_released());
  EXPECT_EQ(slots_of(*into), iota_floats(6, 40));
}

// A destination released while a transfer is in flight: the move fails and
// its rollback must not write the before-image into memory the released
// carrier gave back (which a new carrier may own by then).
TEST(MoveDispatch_Issue20Step4, ARollbackNeverWritesIntoADestinationReleasedMeanwhile) {
  register_all();
  constexpr std::int64_t n = 1 << 16;  // 256 KiB: a size CPU's block cache keeps
  auto device = arena_of<Device>(iota_floats(n, 1));
  const std::vector<Value> old_values(static_cast<std::size_t>(n), Value::from_float32(7.0f));
  auto destination = CPU::from_values(old_values, DType::Float32());
  AwaitMove<Tensor> pending = move_async(Tensor(device, Shape{n}), destination);
  destination->release();
  // A new carrier of the same size (CPU's block cache may hand it the
  // released carrier's memory) holding other values.
  const std::vector<Value> fresh_values(static_cast<std::size_t>(n), Value::from_float32(-3.0f));
  auto fresh = CPU::from_values(fresh_values, DType::Float32());
  EXPECT_THROW(pending.wait(), RuntimeError);
  EXPECT_EQ(slots_of(*fresh), fresh_values);
  EXPECT_FALSE(device->is_released());
  EXPECT_EQ(slots_of(*device), iota_floats(n, 1));
}

// ---------------------------------------------------------------- checks and transactions on every route

TEST(MoveDispatch_Issue20Step4, EveryRouteKeepsTheOrderedChecks) {
  for (const RouteCase& c : route_cases()) {
    SCOPED_TRACE(c.name);
    const auto values = iota_floats(4, 1);
    // The dtype check (TypeError) comes before the size check (ValueError).
    {
      auto from = c.source(values);
      auto to = CPU::create(2, DType::Int32());
      EXPECT_THROW(move(Tensor(from, Shape{4}), to), TypeError);
      EXPECT_FALSE(from->is_released());
    }
    // A released destination (RuntimeError) is reported before its dtype
    // (an Int32 destination: TypeError if the dtype were checked first).
    {
      auto from = c.source(values);
      auto to = CPU::create(4, DType::Int32());
      to->release();
      EXPECT_THROW(move(Tensor(from, Shape{4}), to), RuntimeError);
      auto released = c.destination(values);
      released->release();
      EXPECT_THROW(move(Tensor(from, Shape{4}), released), RuntimeError);
      EXPECT_FALSE(from->is_released());
    }
    // Too small: ValueError, nothing changed.
    {
      auto from = c.source(values);
      auto to = c.destination(iota_floats(2, 9));
      EXPECT_THROW(move(Tensor(from, Shape{4}), to), ValueError);
      EXPECT_FALSE(from->is_released());
      EXPECT_EQ(slots_of(*to), iota_floats(2, 9));
      EXPECT_EQ(to->version(), 0u);
    }
  }
}

TEST(MoveDispatch_Issue20Step4, EveryRouteCommitsOnceOrRollsBackBothCarriers) {
  constexpr std::int64_t n = 64;
  for (const RouteCase& c : route_cases()) {
    SCOPED_TRACE(c.name);
    // A failing progress callback (reporting every 16-slot window) fails
    // the move after the transfer started: both carriers as they were.
    {
      auto from = c.source(iota_floats(n, 1));
      auto to = c.destination(iota_floats(n, 500));
      MoveOptions options;
      options.progress_threshold_bytes = 0;
      options.window_bytes = 16 * 4;
      options.progress = [](const MoveProgress& p) {
        if (p.bytes_done > 0) throw ValueError("cancelled");
      };
      EXPECT_THROW(move(Tensor(from, Shape{n}), to, options), ValueError);
      EXPECT_FALSE(from->is_released());
      EXPECT_EQ(slots_of(*from), iota_floats(n, 1));
      EXPECT_EQ(slots_of(*to), iota_floats(n, 500));
      EXPECT_EQ(to->version(), 0u);
      EXPECT_EQ(from->version(), 0u);
    }
    // Success: the values, one version step, the source released.
    {
      auto from = c.source(iota_floats(n, 1));
      auto to = c.destination(iota_floats(n, 500));
      const Tensor moved = move(Tensor(from, Shape{n}), to);
      EXPECT_EQ(moved.values(), iota_floats(n, 1));
      EXPECT_EQ(to->version(), 1u);
      EXPECT_TRUE(from->is_released());
    }
  }
}

// The framework's host-memory copy images the destination block by block
// just ahead of the copy; a failure part way restores exactly the bytes that
// were there, zero blocks and data blocks alike, also where a broadcast
// layout writes a slot more than once.
TEST(MoveDispatch_Issue20Step4, TheHostMemoryCopyRestoresTheDestinationExactlyAfterAFailurePartWay) {
  constexpr std::int64_t n = 100000;  // several 64 KiB image blocks
  // Zero blocks and data blocks, the broadcast case's addressed slots
  // [0, 100) among the data.
  std::vector<Value> before(static_cast<std::size_t>(n), Value::from_float32(0.0f));
  for (std::int64_t i = 0; i < 200; ++i) before[static_cast<std::size_t>(i)] = Value::from_float32(-1000.0f - i);
  for (std::int64_t i = 40000; i < 60000; ++i) before[static_cast<std::size_t>(i)] = Value::from_float32(-1.0f * i);
  for (const bool broadcast : {false, true}) {
    SCOPED_TRACE(broadcast ? "broadcast source" : "compact source");
    auto from = CPU::from_values(iota_floats(n, 1), DType::Float32());
    auto to = CPU::from_values(before, DType::Float32());
    ASSERT_EQ(describe_move_route(*from, *to).copy, MoveCopyPath::HostMemory);
    // A broadcast view: 1000 columns of one 100-slot column (stride 0).
    const Tensor t = broadcast ? Tensor(from, 0, Layout(Shape{100, 1000}, Stride{1, 0})) : Tensor(from, Shape{n});
    MoveOptions options;
    options.progress_threshold_bytes = 0;
    options.window_bytes = 4 * 25000;
    int calls = 0;
    options.progress = [&](const MoveProgress&) {
      if (++calls == 3) throw ValueError("cancelled");
    };
    EXPECT_THROW(move(t, to, options), ValueError);
    EXPECT_EQ(slots_of(*to), before);
    EXPECT_EQ(to->version(), 0u);
    EXPECT_FALSE(from->is_released());
    const std::vector<Value> expected = t.values();
    const Tensor moved = move(t, to);
    EXPECT_EQ(moved.values(), expected);
    // Slots the layout does not address keep their values (the elementwise
    // fallback copies logical runs).
    if (broadcast) {
      EXPECT_EQ(to->read_values(100, 1), std::vector<Value>{before[100]});
    }
  }
}

}  // namespace
