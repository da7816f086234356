// StorageProvider::with_byte_ranges (docs/extension.md, "Ranges"; issue 23:
// a device carrier's moves to and from the host are bulk, never element by
// element): the framework moves a definition-backed class's runs through its
// byte callbacks wherever it holds bytes.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>

namespace {

using namespace strideweave;
namespace ext = strideweave::extension;

class ByteArena final : public ext::DefinedCarrier {
 public:
  explicit ByteArena(ext::Construction key) : DefinedCarrier(std::move(key)) {}
  std::vector<float> memory;
  static inline std::atomic<int> slot_calls{0}, value_runs{0}, byte_reads{0}, byte_writes{0};
};

void register_byte_arena() {
  static const bool once = [] {
    using A = ByteArena;
    ext::StorageProvider p(
        [](const Carrier&, const DType& d) { return &d == &DType::Float32(); },
        [](const Carrier& c) { return static_cast<std::int64_t>(static_cast<const A&>(c).memory.size()); },
        [](Carrier& c, std::int64_t n) { static_cast<A&>(c).memory.assign(static_cast<std::size_t>(n), 0.0f); },
        [](Carrier& c) { static_cast<A&>(c).memory.clear(); },
        [](const Carrier& c, std::int64_t i) {
          ++A::slot_calls;
          return Value::from_float32(static_cast<const A&>(c).memory[static_cast<std::size_t>(i)]);
        },
        [](Carrier& c, std::int64_t i, const Value& v) {
          ++A::slot_calls;
          static_cast<A&>(c).memory[static_cast<std::size_t>(i)] = v.f;
        },
        /*elementwise_fallback=*/true);
    p = p.with_ranges(
             [](const Carrier& c, std::int64_t first, std::span<Value> out) {
               ++A::value_runs;
               for (std::size_t k = 0; k < out.size(); ++k)
                 out[k] = Value::from_float32(static_cast<const A&>(c).memory[static_cast<std::size_t>(first) + k]);
             },
             [](Carrier& c, std::int64_t first, std::span<const Value> values) {
               ++A::value_runs;
               for (std::size_t k = 0; k < values.size(); ++k)
                 static_cast<A&>(c).memory[static_cast<std::size_t>(first) + k] = values[k].f;
             })
            .with_byte_ranges(
                [](const Carrier& c, std::int64_t first, std::int64_t count, std::byte* out) {
                  ++A::byte_reads;
                  std::memcpy(out, static_cast<const A&>(c).memory.data() + first,
                              static_cast<std::size_t>(count) * sizeof(float));
                },
                [](Carrier& c, std::int64_t first, std::int64_t count, const std::byte* data) {
                  ++A::byte_writes;
                  std::memcpy(static_cast<A&>(c).memory.data() + first, data,
                              static_cast<std::size_t>(count) * sizeof(float));
                });
    ext::register_carrier_definition(carrier_class<A>(), ext::CarrierDefinition(p));
    return true;
  }();
  (void)once;
}

std::vector<Value> floats(std::initializer_list<float> fs) {
  std::vector<Value> out;
  for (float f : fs) out.push_back(Value::from_float32(f));
  return out;
}

TEST(ByteRanges_Issue23, MovesToAndFromHostMemoryGoThroughTheByteCallbacksOneRunEach) {
  register_byte_arena();
  ByteArena::slot_calls = ByteArena::value_runs = ByteArena::byte_reads = ByteArena::byte_writes = 0;
  const Tensor host(CPU::from_values(floats({1, 2, 3, 4, 5, 6}), DType::Float32()), Shape::of({2, 3}));
  // One byte write for the run; the destination's before-image is one byte read.
  const Tensor on_arena = move(host, ext::create<ByteArena>(6, DType::Float32()));
  EXPECT_EQ(static_cast<const ByteArena&>(*on_arena.carrier()).memory, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(ByteArena::byte_writes.load(), 1);
  EXPECT_EQ(ByteArena::byte_reads.load(), 1);
  const Tensor back = move(on_arena, CPU::create(6));
  EXPECT_EQ(back.values(), floats({1, 2, 3, 4, 5, 6}));  // a move releases its source
  EXPECT_EQ(ByteArena::byte_reads.load(), 2);
  EXPECT_EQ(ByteArena::slot_calls.load(), 0);
  EXPECT_EQ(ByteArena::value_runs.load(), 0);
}

TEST(ByteRanges_Issue23, CarrierBytesUseTheCallbacksAndStayCheckedAndVersioned) {
  register_byte_arena();
  ByteArena::slot_calls = ByteArena::value_runs = ByteArena::byte_reads = ByteArena::byte_writes = 0;
  const std::shared_ptr<ByteArena> a = ext::create<ByteArena>(3, DType::Float32());
  const std::uint64_t version = a->version();
  const float two[] = {5.0f, 6.0f};
  a->write_bytes(1, std::as_bytes(std::span<const float>(two)));
  EXPECT_EQ(a->version(), version + 1);
  std::vector<std::byte> out(3 * sizeof(float));
  a->read_bytes(0, out);
  float got[3];
  std::memcpy(got, out.data(), sizeof got);
  EXPECT_EQ(got[0], 0.0f);
  EXPECT_EQ(got[1], 5.0f);
  EXPECT_EQ(got[2], 6.0f);
  EXPECT_THROW(a->write_bytes(2, std::as_bytes(std::span<const float>(two))), IndexError);  // past the end, nothing written
  EXPECT_EQ(a->memory[2], 6.0f);
  EXPECT_GE(ByteArena::byte_writes.load(), 1);
  EXPECT_EQ(ByteArena::slot_calls.load(), 0);
}

TEST(ByteRanges_Issue23, AProviderWithoutByteCallbacksReportsNoneOffered) {
  const ext::StorageProvider p(
      [](const Carrier&, const DType&) { return true; }, [](const Carrier&) { return std::int64_t{0}; },
      [](Carrier&, std::int64_t) {}, [](Carrier&) {}, [](const Carrier&, std::int64_t) { return Value(); },
      [](Carrier&, std::int64_t, const Value&) {});
  EXPECT_FALSE(p.read_bytes());
  EXPECT_FALSE(p.write_bytes());
  const ext::StorageProvider q = p.with_byte_ranges(nullptr, [](Carrier&, std::int64_t, std::int64_t, const std::byte*) {});
  EXPECT_FALSE(q.read_bytes());
  EXPECT_TRUE(q.write_bytes());
}

}  // namespace
