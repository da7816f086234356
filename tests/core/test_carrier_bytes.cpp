// Bytes: a run of slots in the dtype's host representation (docs/storage.md,
// "Bytes"; issue 22, step 4: tiles move as bytes, never as Values).
// Carrier::read_bytes / write_bytes, the byte range hooks, and copy_range's
// use of them between host memory and a class with byte hooks. Suite name =
// requirement, test name = rule.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace {

using namespace strideweave;

std::vector<Value> iota_floats(std::int64_t n, float start = 0.0f) {
  std::vector<Value> out;
  for (std::int64_t i = 0; i < n; ++i) out.push_back(Value::from_float32(start + static_cast<float>(i)));
  return out;
}

template <class T>
std::vector<std::byte> bytes_of(const std::vector<T>& v) {
  std::vector<std::byte> out(v.size() * sizeof(T));
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

// A Float32 carrier whose storage moves only through the byte hooks: its
// Value range hooks fail the test when called. It counts byte-hook calls and
// can fail its next byte write half way (after writing the first half).
class BytesOnly final : public Carrier {
 public:
  explicit BytesOnly(std::vector<float> values) : Carrier(DType::Float32(), true), values_(std::move(values)) {}
  bool supports_storage_dtype(const DType& d) const noexcept override { return &d == &DType::Float32(); }
  mutable int byte_reads = 0;
  int byte_writes = 0;
  bool fail_next_write = false;
  bool fail_next_read = false;
  const std::vector<float>& raw() const { return values_; }

 protected:
  std::int64_t storage_size() const noexcept override { return static_cast<std::int64_t>(values_.size()); }
  Value read_slot(std::int64_t i) const override { return Value::from_float32(values_[static_cast<std::size_t>(i)]); }
  void write_slot(std::int64_t i, const Value& v) override { values_[static_cast<std::size_t>(i)] = v.f; }
  void read_range(std::int64_t, std::int64_t, Value*) const override { ADD_FAILURE() << "a Value range read"; }
  void write_range(std::int64_t, std::span<const Value>) override { ADD_FAILURE() << "a Value range write"; }
  bool read_range_bytes(std::int64_t first, std::int64_t count, std::byte* out) const override {
    ++byte_reads;
    if (fail_next_read) {
      const_cast<BytesOnly*>(this)->fail_next_read = false;
      throw OSError("BytesOnly: injected read failure", 5, "", std::nullopt);
    }
    std::memcpy(out, values_.data() + first, static_cast<std::size_t>(count) * sizeof(float));
    return true;
  }
  bool write_range_bytes(std::int64_t first, std::int64_t count, const std::byte* data) override {
    ++byte_writes;
    if (fail_next_write) {
      fail_next_write = false;
      std::memcpy(values_.data() + first, data, static_cast<std::size_t>(count / 2) * sizeof(float));
      throw OSError("BytesOnly: injected write failure", 5, "", std::nullopt);
    }
    std::memcpy(values_.data() + first, data, static_cast<std::size_t>(count) * sizeof(float));
    return true;
  }
  void release_storage() noexcept override { values_.clear(); }
  std::shared_ptr<Carrier> make_like(std::int64_t size, bool, const SimpleDType&, bool) const override {
    return std::make_shared<BytesOnly>(std::vector<float>(static_cast<std::size_t>(size)));
  }

 private:
  std::vector<float> values_;
};

TEST(Storage_Bytes, EveryCarrierReadsAndWritesRunsInTheHostRepresentation) {
  const std::vector<float> want{1.5f, -2.0f, 3.25f};
  const std::vector<std::shared_ptr<Carrier>> carriers{
      CPU::from_values(iota_floats(5), DType::Float32()), Generic::from_values(iota_floats(5), DType::Float32()),
      FileBacked::from_values(iota_floats(5), DType::Float32()),
      std::make_shared<BytesOnly>(std::vector<float>(5))};
  for (const std::shared_ptr<Carrier>& c : carriers) {
    SCOPED_TRACE(c->class_name());
    EXPECT_EQ(c->element_bytes(), 4u);
    const std::uint64_t v0 = c->version();
    c->write_bytes(1, bytes_of(want));
    EXPECT_EQ(c->version(), v0 + 1);  // one versioned mutation
    std::vector<float> got(3);
    c->read_bytes(1, std::as_writable_bytes(std::span<float>(got)));
    EXPECT_EQ(got, want);
    EXPECT_EQ(c->version(), v0 + 1);  // a read is not a mutation
    if (!dynamic_cast<BytesOnly*>(c.get())) {
      EXPECT_EQ(c->read_values(1, 3)[2].f, 3.25f);  // the same slots as Values
    }
  }
  const auto ints = CPU::from_values(std::vector<Value>{Value::from_int32(0), Value::from_int32(0)}, DType::Int32());
  ints->write_bytes(0, bytes_of(std::vector<std::int32_t>{-7, 9}));
  EXPECT_EQ(ints->read_values(0, 2)[0].i, -7);
  const auto flags = Generic::from_values(std::vector<Value>{Value::from_bool(false), Value::from_bool(false)}, DType::Bool());
  EXPECT_EQ(flags->element_bytes(), sizeof(bool));
  flags->write_bytes(1, std::vector<std::byte>{std::byte{1}});
  EXPECT_TRUE(flags->read_values(1, 1)[0].b);
}

TEST(Storage_Bytes, FileBackedByteRunsCrossResidencyWindows) {
  // One page of window: 1024 slots; a 3000-slot run crosses three windows.
  auto file = FileBacked::create(std::nullopt, DType::Float32(), true, 4096, 4096);
  std::vector<float> values(3000);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f;
  file->write_bytes(500, bytes_of(values));
  std::vector<float> back(3000);
  file->read_bytes(500, std::as_writable_bytes(std::span<float>(back)));
  EXPECT_EQ(back, values);
  EXPECT_EQ(file->read_values(3499, 1)[0].f, 2999 * 0.5f);
}

TEST(Storage_Bytes, ChecksComeFirstAndChangeNothing) {
  auto c = CPU::from_values(iota_floats(4), DType::Float32());
  std::vector<std::byte> six(6), eight(8);
  EXPECT_THROW(c->read_bytes(0, six), ValueError);  // not whole elements
  EXPECT_THROW(c->write_bytes(0, six), ValueError);
  EXPECT_THROW(c->read_bytes(3, eight), IndexError);
  EXPECT_THROW(c->write_bytes(-1, eight), IndexError);
  EXPECT_EQ(c->version(), 0u);
  EXPECT_EQ(c->read_values(0, 4)[3].f, 3.0f);
  auto frozen = CPU::from_values(iota_floats(2), DType::Float32(), false);
  EXPECT_THROW(frozen->write_bytes(0, eight), RuntimeError);
  auto flags = CPU::from_values(std::vector<Value>{Value::from_bool(false), Value::from_bool(true)}, DType::Bool());
  EXPECT_THROW(flags->write_bytes(0, std::vector<std::byte>{std::byte{0}, std::byte{2}}), ValueError);
  EXPECT_TRUE(flags->read_values(1, 1)[0].b);  // nothing written
  EXPECT_EQ(flags->version(), 0u);
  c->release();
  EXPECT_THROW(c->read_bytes(0, eight), RuntimeError);
}

TEST(Storage_Bytes, AByteWriteThatFailsMidwayIsUndoneAndKeepsTheVersion) {
  auto c = std::make_shared<BytesOnly>(std::vector<float>{1, 2, 3, 4});
  c->fail_next_write = true;
  EXPECT_THROW(c->write_bytes(0, bytes_of(std::vector<float>{9, 9, 9, 9})), OSError);
  EXPECT_EQ(c->raw(), (std::vector<float>{1, 2, 3, 4}));  // restored from the before-image
  EXPECT_EQ(c->version(), 0u);
}

TEST(Storage_Bytes, CopyRangeMovesBytesBetweenHostMemoryAndByteHookCarriers) {
  auto hooks = std::make_shared<BytesOnly>(std::vector<float>{10, 11, 12, 13});
  auto host = CPU::from_values(iota_floats(4), DType::Float32());
  host->copy_range(*hooks, 1, 0, 3);  // into host memory: one byte read
  EXPECT_EQ(hooks->byte_reads, 1);
  EXPECT_EQ(host->read_values(0, 4)[2].f, 13.0f);
  EXPECT_EQ(host->version(), 1u);
  hooks->copy_range(*host, 3, 0, 1);  // out of host memory: a before-image read, one byte write
  EXPECT_EQ(hooks->byte_writes, 1);
  EXPECT_EQ(hooks->raw()[0], 3.0f);
  EXPECT_EQ(hooks->version(), 1u);
}

TEST(Storage_Bytes, ACopyIntoHostMemoryWhoseSourceFailsLeavesTheDestinationAsItWas) {
  auto hooks = std::make_shared<BytesOnly>(std::vector<float>{10, 11, 12, 13});
  auto host = CPU::from_values(iota_floats(4), DType::Float32());
  hooks->fail_next_read = true;
  EXPECT_THROW(host->copy_range(*hooks, 0, 0, 4), OSError);
  EXPECT_EQ(host->read_values(0, 4)[1].f, 1.0f);
  EXPECT_EQ(host->version(), 0u);
  auto target = std::make_shared<BytesOnly>(std::vector<float>{1, 2, 3, 4});
  target->fail_next_write = true;
  EXPECT_THROW(target->copy_range(*host, 0, 0, 4), OSError);
  EXPECT_EQ(target->raw(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(target->version(), 0u);
}

}  // namespace
