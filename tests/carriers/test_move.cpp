// Movement (core-concepts.md 7.1-7.4; interop-movement requirements and
// scenarios; carrier-extension.md R5; docs/storage.md, "Movement").
//
// Suite names give the requirement: InteropMovement_<requirement>, test
// names its scenario; Storage_Move* for the choices docs/storage.md writes
// down where the specification is silent (transaction, faults, progress,
// asynchronous routes). Registries are process-wide: every test that
// registers declares its own carrier classes (VecCarrier<N>, Arena<N>).
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include "support/test_owner.h"

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "sysio/system_io.h"
#include "support/bounded_wait.h"

namespace {

using namespace strideweave;
namespace ext = strideweave::extension;
using FileIo = sysio::SystemIo;
using sysio::ScopedSystemIo;

Value F(float v) { return Value::from_float32(v); }

Tensor cpu_tensor(std::vector<float> values) {
  std::vector<Value> v;
  for (float x : values) v.push_back(F(x));
  const auto n = static_cast<std::int64_t>(v.size());
  return Tensor(CPU::from_values(v, DType::Float32()), Shape::of({n}));
}

std::vector<float> floats(const Tensor& t) {
  std::vector<float> out;
  for (const Value& v : t.values()) out.push_back(v.f);
  return out;
}

std::vector<float> slots(const Carrier& c) {
  std::vector<float> out;
  for (std::int64_t i = 0; i < c.size(); ++i) out.push_back(c.get_value(i).f);
  return out;
}

std::shared_ptr<FileBacked> empty_file() { return FileBacked::create(std::nullopt, DType::Float32()); }

// A plain definition-free carrier (its own storage hooks), one class per N;
// not final, so that a subclass can test exact-class dispatch. `owned`
// makes it owned by a (pretend) composite; `fail_release` makes its release
// hook throw.
template <int N>
class VecCarrier : public Carrier {
 public:
  explicit VecCarrier(std::int64_t n, bool mutable_ = true)
      : Carrier(DType::Float32(), mutable_), data(static_cast<std::size_t>(n), F(0)) {}
  bool supports_storage_dtype(const DType& d) const noexcept override { return &d == &DType::Float32(); }
  std::vector<Value> data;
  bool fail_release = false;

 protected:
  std::int64_t storage_size() const noexcept override { return static_cast<std::int64_t>(data.size()); }
  Value read_slot(std::int64_t i) const override { return data[static_cast<std::size_t>(i)]; }
  void write_slot(std::int64_t i, const Value& v) override { data[static_cast<std::size_t>(i)] = v; }
  void release_storage() override {
    if (fail_release) throw RuntimeError("VecCarrier: release refused (test)");
    data.clear();
  }
  std::shared_ptr<Carrier> make_like(std::int64_t n, bool m, const SimpleDType&, bool) const override {
    return std::make_shared<VecCarrier<N>>(n, m);
  }
};
template <int N>
class SubVecCarrier final : public VecCarrier<N> {
 public:
  using VecCarrier<N>::VecCarrier;
};

template <int N>
Tensor vec_tensor(std::vector<float> values, std::shared_ptr<VecCarrier<N>>* out = nullptr) {
  auto c = std::make_shared<VecCarrier<N>>(static_cast<std::int64_t>(values.size()));
  for (std::size_t i = 0; i < values.size(); ++i) c->data[i] = F(values[i]);
  if (out) *out = c;
  return Tensor(c, Shape::of({static_cast<std::int64_t>(values.size())}));
}

// A custom copy that records what it saw.
struct RecordingMove final : MoveOperation {
  mutable std::int64_t seen_count = -1;
  mutable int calls = 0;
  std::optional<CarrierClass> pinned_source;
  std::optional<CarrierClass> source_class() const override { return pinned_source; }
  std::string name() const override { return "RecordingMove"; }

 protected:
  MoveSubmission _copy(const Tensor& tensor, Carrier& destination, const Tensor&, std::int64_t element_count,
                       MoveContext&) const override {
    ++calls;
    seen_count = element_count;
    for (std::int64_t k = 0; k < element_count; ++k)
      MoveContext::write(destination, k, MoveContext::read(*tensor.carrier(), tensor.offset() + k));
    return std::monostate{};
  }
};

// ---------------------------------------------------------------- move relocates values

TEST(InteropMovement_MoveRelocatesValues, MoveAndReleaseTheSource) {
  const Tensor x = cpu_tensor({1, 2, 3, 4, 5, 6}).reshape(Shape::of({2, 3}));
  auto dest = FileBacked::create(std::nullopt, DType::Float32(), true, 6);
  const std::uint64_t v0 = dest->version();
  const Tensor y = move(x, dest);
  EXPECT_EQ(y.carrier().get(), dest.get());
  EXPECT_EQ(y.offset(), 0);
  EXPECT_EQ(y.layout(), x.layout());
  EXPECT_EQ(floats(y), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(x.carrier()->is_released());
  EXPECT_THROW(x.values(), RuntimeError);
  EXPECT_EQ(dest->version(), v0 + 1);  // one versioned mutation
}

TEST(InteropMovement_MoveRelocatesValues, MoveIntoAGenericDestinationKeepsANonZeroOffsetsValues) {
  const Tensor base = cpu_tensor({0, 1, 2, 3, 4, 5, 6, 7});
  const Tensor x = base.slice(0, 2, 7, 2);  // offset 2, values 2 4 6, cosize 5
  auto dest = Generic::zeros(5, DType::Float32());
  const Tensor y = move(x, dest);
  EXPECT_EQ(y.offset(), 0);
  EXPECT_EQ(y.layout(), x.layout());
  EXPECT_EQ(floats(y), (std::vector<float>{2, 4, 6}));
  // The elementwise fallback leaves the holes at their prior values.
  EXPECT_EQ(slots(*dest), (std::vector<float>{2, 0, 4, 0, 6}));
}

TEST(InteropMovement_MoveRelocatesValues, AllocateAnEmptyDestination) {
  const Tensor x = cpu_tensor({1, 2, 3});
  auto dest = empty_file();
  ASSERT_EQ(dest->size(), 0);
  const Tensor y = move(x, dest);
  EXPECT_EQ(dest->size(), 3);
  EXPECT_EQ(floats(y), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(std::filesystem::file_size(dest->path()), 12u);
}

TEST(InteropMovement_MoveRelocatesValues, MoveABroadcastViewWithoutMaterializingIt) {
  const Tensor x = cpu_tensor({7, 8}).broadcast_to(Shape::of({3, 2}));
  ASSERT_EQ(x.size(), 6);
  ASSERT_EQ(x.layout().cosize(), 2);
  auto dest = empty_file();
  const Tensor y = move(x, dest);
  EXPECT_EQ(dest->size(), 2);
  EXPECT_EQ(y.layout(), x.layout());
  EXPECT_EQ(floats(y), (std::vector<float>{7, 7, 7, 8, 8, 8}));  // logical order: first mode fastest
}

TEST(InteropMovement_MoveRelocatesValues, RejectAnUnusableDestinationBeforeCopying) {
  const Tensor x = cpu_tensor({1, 2, 3});
  const std::uint64_t sv = x.carrier()->version();
  auto expect_untouched = [&](const std::shared_ptr<Carrier>& d, std::vector<float> before, std::uint64_t dv) {
    EXPECT_FALSE(x.carrier()->is_released());
    EXPECT_EQ(x.carrier()->version(), sv);
    EXPECT_EQ(floats(x), (std::vector<float>{1, 2, 3}));
    if (!d->is_released()) {
      EXPECT_EQ(slots(*d), before);
      EXPECT_EQ(d->version(), dv);
    }
  };
  auto released = CPU::create(3);
  released->release();
  EXPECT_THROW(move(x, released), RuntimeError);
  expect_untouched(released, {}, 0);
  auto immutable = CPU::create(3, DType::Float32(), false);
  EXPECT_THROW(move(x, immutable), RuntimeError);
  expect_untouched(immutable, {0, 0, 0}, 0);
  auto other = CPU::create(3, DType::Int32());
  EXPECT_THROW(move(x, other), TypeError);
  EXPECT_THROW(move(x, x.carrier()), ValueError);
  auto small = CPU::create(2);
  EXPECT_THROW(move(x, small), ValueError);
  expect_untouched(small, {0, 0}, 0);
  auto small_file = FileBacked::create(std::nullopt, DType::Float32(), true, 2);  // not empty: no allocation
  EXPECT_THROW(move(x, small_file), ValueError);
  expect_untouched(small_file, {0, 0}, 0);
}

// ---------------------------------------------------------------- the ordered checks, one by one

TEST(InteropMovement_OrderedChecks, SourceReleasedIsRuntimeError) {
  const Tensor x = cpu_tensor({1});
  x.carrier()->release();
  try {
    move(x, CPU::create(1));
    FAIL();
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor's CPU carrier is released"), std::string::npos) << e.what();
  }
}

TEST(InteropMovement_OrderedChecks, SourceOwnedIsRuntimeError) {
  std::shared_ptr<VecCarrier<1>> c;
  const Tensor x = vec_tensor<1>({1, 2}, &c);
  const auto owner = sw_support::TestOwner::claiming(c);
  try {
    move(x, CPU::create(2));
    FAIL();
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("owned by another carrier"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(c->is_released());
}

TEST(InteropMovement_OrderedChecks, DestinationNotACarrierIsTypeError) {
  EXPECT_THROW(move(cpu_tensor({1}), nullptr), TypeError);
}

TEST(InteropMovement_OrderedChecks, DestinationIsTheOwnCarrierIsValueError) {
  const Tensor x = cpu_tensor({1});
  EXPECT_THROW(move(x, x.carrier()), ValueError);
  EXPECT_FALSE(x.carrier()->is_released());
}

TEST(InteropMovement_OrderedChecks, DestinationReleasedIsRuntimeError) {
  auto d = CPU::create(1);
  d->release();
  try {
    move(cpu_tensor({1}), d);
    FAIL();
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("destination CPU carrier is released"), std::string::npos) << e.what();
  }
}

TEST(InteropMovement_OrderedChecks, DestinationNotPubliclyMutableIsRuntimeError) {
  auto owned = std::make_shared<VecCarrier<2>>(1);
  const auto owner = sw_support::TestOwner::claiming(owned);  // intrinsically mutable, but owned
  EXPECT_THROW(move(cpu_tensor({1}), owned), RuntimeError);
  EXPECT_THROW(move(cpu_tensor({1}), CPU::create(1, DType::Float32(), false)), RuntimeError);
}

TEST(InteropMovement_OrderedChecks, DestinationDtypeDiffersIsTypeError) {
  EXPECT_THROW(move(cpu_tensor({1}), CPU::create(1, DType::Int32())), TypeError);
}

TEST(InteropMovement_OrderedChecks, PinnedClassMismatchIsTypeError) {
  auto op = std::make_shared<RecordingMove>();
  op->pinned_source = carrier_class<CPU>();
  ScopedMoveOperation scope(carrier_class<VecCarrier<3>>(), carrier_class<CPU>(), op);
  std::shared_ptr<VecCarrier<3>> c;
  const Tensor x = vec_tensor<3>({1, 2}, &c);
  try {
    move(x, CPU::create(2));
    FAIL();
  } catch (const TypeError& e) {
    EXPECT_NE(std::string(e.what()).find("RecordingMove requires a CPU source"), std::string::npos) << e.what();
  }
  EXPECT_EQ(op->calls, 0);
  EXPECT_FALSE(c->is_released());
}

TEST(InteropMovement_OrderedChecks, TooSmallAndNotAllocatableIsValueError) {
  EXPECT_THROW(move(cpu_tensor({1, 2}), CPU::create(1)), ValueError);
}

TEST(InteropMovement_OrderedChecks, TheEarlierCheckWinsWhenTwoFail) {
  // Source released and destination released: the source's RuntimeError.
  const Tensor x = cpu_tensor({1});
  x.carrier()->release();
  auto released = CPU::create(1);
  released->release();
  try {
    move(x, released);
    FAIL();
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor's CPU carrier"), std::string::npos) << e.what();
  }
  // Immutable (RuntimeError) before dtype (TypeError).
  EXPECT_THROW(move(cpu_tensor({1}), CPU::create(1, DType::Int32(), false)), RuntimeError);
  // Dtype (TypeError) before size (ValueError).
  EXPECT_THROW(move(cpu_tensor({1, 2}), CPU::create(1, DType::Int32())), TypeError);
  // Own carrier (ValueError) before immutability: an immutable source moved onto itself.
  const Tensor frozen(CPU::from_values(std::vector<Value>{F(1)}, DType::Float32(), false), Shape::of({1}));
  EXPECT_THROW(move(frozen, frozen.carrier()), ValueError);
  // Pin (TypeError) before size (ValueError).
  auto op = std::make_shared<RecordingMove>();
  op->pinned_source = carrier_class<CPU>();
  ScopedMoveOperation scope(carrier_class<VecCarrier<4>>(), carrier_class<CPU>(), op);
  EXPECT_THROW(move(vec_tensor<4>({1, 2, 3}), CPU::create(1)), TypeError);
}

// ---------------------------------------------------------------- dispatch

TEST(InteropMovement_MoveDispatch, SelectARegisteredBulkOperation) {
  EXPECT_NE(dynamic_cast<const CpuToFileBackedMoveOperation*>(
                dispatch_move(carrier_class<CPU>(), carrier_class<FileBacked>()).get()),
            nullptr);
  EXPECT_NE(dynamic_cast<const FileBackedToCpuMoveOperation*>(
                dispatch_move(carrier_class<FileBacked>(), carrier_class<CPU>()).get()),
            nullptr);
  // And a move between them runs it: the bulk route copies the holes too.
  const Tensor base = cpu_tensor({0, 1, 2, 3, 4});
  const Tensor x = base.slice(0, 0, 5, 2);  // 0 2 4, cosize 5
  auto file = empty_file();
  const Tensor y = move(x, file);
  EXPECT_EQ(slots(*file), (std::vector<float>{0, 1, 2, 3, 4}));
  auto back = CPU::create(5);
  const Tensor z = move(y, back);
  EXPECT_EQ(floats(z), (std::vector<float>{0, 2, 4}));
  EXPECT_TRUE(file->is_released());
}

TEST(InteropMovement_MoveDispatch, FallBackForAnUnregisteredPair) {
  EXPECT_EQ(dispatch_move(carrier_class<CPU>(), carrier_class<CPU>()), ElementwiseMoveOperation::instance());
  EXPECT_EQ(dispatch_move(carrier_class<Generic>(), carrier_class<FileBacked>()), ElementwiseMoveOperation::instance());
  const Tensor y = move(cpu_tensor({1, 2}), CPU::create(2));
  EXPECT_EQ(floats(y), (std::vector<float>{1, 2}));
}

TEST(InteropMovement_MoveDispatch, DoNotInheritARegistration) {
  auto op = std::make_shared<RecordingMove>();
  ScopedMoveOperation scope(carrier_class<VecCarrier<5>>(), carrier_class<CPU>(), op);
  EXPECT_EQ(dispatch_move(carrier_class<VecCarrier<5>>(), carrier_class<CPU>()), op);
  EXPECT_EQ(dispatch_move(carrier_class<SubVecCarrier<5>>(), carrier_class<CPU>()),
            ElementwiseMoveOperation::instance());
  auto sub = std::make_shared<SubVecCarrier<5>>(2);
  sub->data = {F(1), F(2)};
  move(Tensor(sub, Shape::of({2})), CPU::create(2));
  EXPECT_EQ(op->calls, 0);
}

// ---------------------------------------------------------------- registration

TEST(InteropMovement_MoveRegistration, RefuseToOverwriteARegistration) {
  auto first = std::make_shared<RecordingMove>();
  auto second = std::make_shared<RecordingMove>();
  ScopedMoveOperation scope(carrier_class<VecCarrier<6>>(), carrier_class<CPU>(), first);
  try {
    register_move_operation(carrier_class<VecCarrier<6>>(), carrier_class<CPU>(), second);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("CPU"), std::string::npos) << e.what();
  }
  EXPECT_EQ(dispatch_move(carrier_class<VecCarrier<6>>(), carrier_class<CPU>()), first);
  // A built-in pair fails the same way rather than succeeding as a no-op.
  const auto builtin = dispatch_move(carrier_class<CPU>(), carrier_class<FileBacked>());
  EXPECT_THROW(register_move_operation(carrier_class<CPU>(), carrier_class<FileBacked>(), builtin), ValueError);
  EXPECT_EQ(dispatch_move(carrier_class<CPU>(), carrier_class<FileBacked>()), builtin);
}

TEST(InteropMovement_MoveRegistration, RemoveARegistration) {
  auto op = std::make_shared<RecordingMove>();
  register_move_operation(carrier_class<VecCarrier<7>>(), carrier_class<CPU>(), op);
  EXPECT_EQ(unregister_move_operation(carrier_class<VecCarrier<7>>(), carrier_class<CPU>()), op);
  EXPECT_THROW(unregister_move_operation(carrier_class<VecCarrier<7>>(), carrier_class<CPU>()), KeyError);
}

TEST(InteropMovement_MoveRegistration, ScopeARegistrationToABlock) {
  auto op = std::make_shared<RecordingMove>();
  try {
    ScopedMoveOperation scope(carrier_class<VecCarrier<8>>(), carrier_class<CPU>(), op);
    EXPECT_EQ(dispatch_move(carrier_class<VecCarrier<8>>(), carrier_class<CPU>()), op);
    throw ValueError("leave the block");
  } catch (const ValueError&) {
  }
  EXPECT_EQ(dispatch_move(carrier_class<VecCarrier<8>>(), carrier_class<CPU>()), ElementwiseMoveOperation::instance());
  {
    ScopedMoveOperation scope(carrier_class<VecCarrier<8>>(), carrier_class<CPU>(), op);
  }
  EXPECT_EQ(registered_move_operation_for(carrier_class<VecCarrier<8>>(), carrier_class<CPU>()), nullptr);
}

TEST(InteropMovement_MoveRegistration, NonConformingArgumentsAreTypeErrors) {
  auto op = std::make_shared<RecordingMove>();
  EXPECT_THROW(register_move_operation(carrier_class<int>(), carrier_class<CPU>(), op), TypeError);
  EXPECT_THROW(register_move_operation(carrier_class<CPU>(), carrier_class<Carrier>(), op), TypeError);
  EXPECT_THROW(register_move_operation(carrier_class<VecCarrier<9>>(), carrier_class<CPU>(), nullptr), TypeError);
  EXPECT_EQ(registered_move_operation_for(carrier_class<VecCarrier<9>>(), carrier_class<CPU>()), nullptr);
}

// ---------------------------------------------------------------- copy hook and pins

TEST(InteropMovement_CopyHook, RunACustomCopy) {
  auto op = std::make_shared<RecordingMove>();
  ScopedMoveOperation scope(carrier_class<VecCarrier<10>>(), carrier_class<CPU>(), op);
  const Tensor x = vec_tensor<10>({0, 1, 2, 3, 4, 5, 6}).slice(0, 1, 6, 2);  // offset 1: 1 3 5, cosize 5
  auto dest = CPU::create(5);
  const Tensor y = move(x, dest);
  EXPECT_EQ(op->calls, 1);
  EXPECT_EQ(op->seen_count, 5);  // the layout's cosize
  EXPECT_EQ(floats(y), (std::vector<float>{1, 3, 5}));
  EXPECT_EQ(slots(*dest), (std::vector<float>{1, 2, 3, 4, 5}));
}

TEST(InteropMovement_PinnedPair, RejectAMismatchedCarrierClass) {
  auto op = std::make_shared<RecordingMove>();
  op->pinned_source = carrier_class<CPU>();
  ScopedMoveOperation scope(carrier_class<Generic>(), carrier_class<VecCarrier<11>>(), op);
  const Tensor x(Generic::create(std::vector<Value>{F(1), F(2)}, DType::Float32()), Shape::of({2}));
  EXPECT_THROW(move(x, std::make_shared<VecCarrier<11>>(2)), TypeError);
  EXPECT_FALSE(x.carrier()->is_released());
  EXPECT_EQ(op->calls, 0);
}

// ---------------------------------------------------------------- autograd

TEST(InteropMovement_Autograd, MoveAGradientBackToTheSourceCarrierClass) {
  Tensor x = cpu_tensor({1, 2, 3});
  const Tensor y = move(x, empty_file());
  ASSERT_NE(y.grad_fn(), nullptr);
  EXPECT_EQ(y.grad_fn()->name(), "move");
  const Tensor cot(FileBacked::from_values(std::vector<Value>{F(10), F(20), F(30)}, DType::Float32()), Shape::of({3}));
  const auto grads = y.grad_fn()->backward(cot);
  ASSERT_EQ(grads.size(), 1u);
  ASSERT_TRUE(grads[0].has_value());
  EXPECT_TRUE(grads[0]->carrier_type() == carrier_class<CPU>());
  EXPECT_NE(grads[0]->carrier().get(), x.carrier().get());  // fresh storage
  EXPECT_TRUE(grads[0]->is_leaf());  // detached
  EXPECT_EQ(floats(*grads[0]), (std::vector<float>{10, 20, 30}));
  y.backward(cot);
  ASSERT_TRUE(x.grad().has_value());
  EXPECT_TRUE(x.grad()->carrier_type() == carrier_class<CPU>());
  EXPECT_EQ(floats(*x.grad()), (std::vector<float>{10, 20, 30}));
}

TEST(InteropMovement_Autograd, RejectANonInjectiveCotangent) {
  Tensor x = cpu_tensor({1, 2, 3});
  const Tensor y = move(x, empty_file());
  const Tensor stride_zero(FileBacked::from_values(std::vector<Value>{F(1)}, DType::Float32()), 0,
                           Layout(Shape::of({3}), Stride::of({0})));
  try {
    y.grad_fn()->backward(stride_zero);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("injective gradient layout is required"), std::string::npos) << e.what();
  }
  const Tensor released(FileBacked::from_values(std::vector<Value>{F(1), F(2), F(3)}, DType::Float32()), Shape::of({3}));
  released.carrier()->release();
  EXPECT_THROW(y.grad_fn()->backward(released), RuntimeError);
  const Tensor wrong_shape(FileBacked::from_values(std::vector<Value>{F(1), F(2)}, DType::Float32()), Shape::of({2}));
  EXPECT_THROW(y.grad_fn()->backward(wrong_shape), ValueError);
}

TEST(InteropMovement_Autograd, ABroadcastViewGetsAnInjectiveGradientAndSums) {
  Tensor x = cpu_tensor({1, 2});
  const Tensor b = x.broadcast_to(Shape::of({3, 2}));
  const Tensor y = move(b, Generic::zeros(2, DType::Float32()));
  std::vector<Value> ones(6, F(1));
  y.backward(Tensor(Generic::create(ones, DType::Float32()), Shape::of({3, 2})));
  ASSERT_TRUE(x.grad().has_value());
  EXPECT_EQ(floats(*x.grad()), (std::vector<float>{3, 3}));
}

TEST(InteropMovement_Autograd, NoNodeUnderNoGradOrForANonDifferentiableTensor) {
  Tensor x = cpu_tensor({1});
  {
    NoGradGuard guard;
    EXPECT_EQ(move(x, CPU::create(1)).grad_fn(), nullptr);
  }
  // core-concepts 7.4: a differentiable tensor's move records with no flag.
  EXPECT_NE(move(cpu_tensor({1}), CPU::create(1)).grad_fn(), nullptr);
  const Tensor i(CPU::from_values(std::vector<Value>{Value::from_int32(1)}, DType::Int32()), Shape::of({1}));
  EXPECT_EQ(move(i, CPU::create(1, DType::Int32())).grad_fn(), nullptr);
}

// ---------------------------------------------------------------- transaction and faults

// Fails write_at / read_at: the nth call (0-based) with `error`, or (error
// 0) makes it transfer `short_bytes` bytes (0: no progress).
class MoveFaultIo : public FileIo {
 public:
  MoveFaultIo(std::string call, int nth, int error, std::size_t short_bytes = 0, bool persistent = false)
      : call_(std::move(call)), nth_(nth), error_(error), short_bytes_(short_bytes), persistent_(persistent) {}
  int read_at(int fd, void* b, std::size_t n, std::int64_t o, std::size_t& done) noexcept override {
    if (hit("read_at")) {
      if (error_) return error_;
      return FileIo::read_at(fd, b, std::min(n, short_bytes_), o, done);
    }
    return FileIo::read_at(fd, b, n, o, done);
  }
  int write_at(int fd, const void* b, std::size_t n, std::int64_t o, std::size_t& done) noexcept override {
    if (hit("write_at")) {
      if (error_) return error_;
      return FileIo::write_at(fd, b, std::min(n, short_bytes_), o, done);
    }
    return FileIo::write_at(fd, b, n, o, done);
  }
  int calls(const std::string& c) const { return counts_.count(c) ? counts_.at(c) : 0; }

 private:
  bool hit(const std::string& c) {
    const int k = counts_[c]++;
    return c == call_ && (k == nth_ || (persistent_ && k >= nth_));
  }
  std::string call_;
  int nth_;
  int error_;
  std::size_t short_bytes_;
  bool persistent_;
  std::map<std::string, int> counts_;
};

MoveOptions windows_of(std::int64_t bytes) {
  MoveOptions o;
  o.window_bytes = bytes;
  return o;
}

std::vector<float> iota(int n, float from = 0) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back(from + static_cast<float>(i));
  return v;
}

TEST(Storage_MoveFaults, WriteFailuresLeaveBothCarriersAsTheyWere) {
  for (int error : {EIO, ENOSPC}) {
    const Tensor x = cpu_tensor(iota(100));
    auto dest = FileBacked::create(std::nullopt, DType::Float32(), true, 100);
    for (int i = 0; i < 100; ++i) dest->set_value(i, F(-1));
    const std::uint64_t dv = dest->version(), sv = x.carrier()->version();
    // The before-image is one read; the copy's third window fails.
    MoveFaultIo io("write_at", 2, error);
    ScopedSystemIo scope(io);
    try {
      move(x, dest, windows_of(40));  // 10 slots per window
      FAIL();
    } catch (const OSError& e) {
      EXPECT_EQ(e.error_number(), error);
      EXPECT_EQ(e.filename(), dest->path().string());
      ASSERT_TRUE(e.offset().has_value());
      EXPECT_EQ(*e.offset(), 80);  // the third window
    }
    EXPECT_FALSE(x.carrier()->is_released());
    EXPECT_EQ(x.carrier()->version(), sv);
    EXPECT_EQ(floats(x), iota(100));
    EXPECT_EQ(dest->version(), dv);
    EXPECT_EQ(slots(*dest), std::vector<float>(100, -1));
  }
}

TEST(Storage_MoveFaults, AFailedMoveIntoAnEmptyFileLeavesItEmpty) {
  const Tensor x = cpu_tensor(iota(50));
  auto dest = empty_file();
  MoveFaultIo io("write_at", 1, EIO);
  ScopedSystemIo scope(io);
  EXPECT_THROW(move(x, dest, windows_of(40)), OSError);
  EXPECT_EQ(dest->size(), 0);
  EXPECT_EQ(std::filesystem::file_size(dest->path()), 0u);
  EXPECT_EQ(dest->version(), 0u);
  EXPECT_FALSE(x.carrier()->is_released());
}

TEST(Storage_MoveFaults, ShortWritesAreContinuedAndAStalledWriteIsEIO) {
  {
    MoveFaultIo io("write_at", 0, 0, 6);  // the first write transfers 6 bytes only
    ScopedSystemIo scope(io);
    const Tensor y = move(cpu_tensor(iota(20)), empty_file(), windows_of(40));
    EXPECT_EQ(floats(y), iota(20));
    EXPECT_GT(io.calls("write_at"), 2);
  }
  const Tensor x = cpu_tensor(iota(20));
  auto dest = empty_file();
  MoveFaultIo io("write_at", 0, 0, 0, true);  // no progress at all
  ScopedSystemIo scope(io);
  try {
    move(x, dest);
    FAIL();
  } catch (const OSError& e) {
    EXPECT_EQ(e.error_number(), EIO);
    EXPECT_NE(std::string(e.what()).find("short write"), std::string::npos) << e.what();
    EXPECT_EQ(e.filename(), dest->path().string());
  }
  EXPECT_EQ(dest->size(), 0);
  EXPECT_FALSE(x.carrier()->is_released());
}

TEST(Storage_MoveFaults, ReadFailuresAndShortReadsLeaveBothCarriersAsTheyWere) {
  for (int error : {EIO, 0}) {  // 0: a read that returns end of file (a short read)
    const Tensor x = move(cpu_tensor(iota(30, 1)), empty_file());
    auto dest = CPU::create(30);
    for (int i = 0; i < 30; ++i) dest->set_value(i, F(-2));
    const std::uint64_t dv = dest->version(), sv = x.carrier()->version();
    MoveFaultIo io("read_at", 1, error, 0);
    ScopedSystemIo scope(io);
    try {
      move(x, dest, windows_of(40));
      FAIL();
    } catch (const OSError& e) {
      EXPECT_EQ(e.error_number(), EIO);
      EXPECT_EQ(e.filename(), static_cast<const FileBacked&>(*x.carrier()).path().string());
      EXPECT_EQ(e.offset(), std::optional<std::int64_t>(40));
      if (error == 0) {
        EXPECT_NE(std::string(e.what()).find("short read"), std::string::npos) << e.what();
      }
    }
    EXPECT_FALSE(x.carrier()->is_released());
    EXPECT_EQ(x.carrier()->version(), sv);
    EXPECT_EQ(floats(x), iota(30, 1));
    EXPECT_EQ(dest->version(), dv);
    EXPECT_EQ(slots(*dest), std::vector<float>(30, -2));
  }
}

TEST(Storage_MoveTransaction, ASourceWhoseReleaseFailsRollsTheDestinationBack) {
  std::shared_ptr<VecCarrier<12>> c;
  const Tensor x = vec_tensor<12>({1, 2, 3}, &c);
  c->fail_release = true;
  auto dest = CPU::create(3);
  dest->set_value(0, F(9));
  const std::uint64_t dv = dest->version();
  EXPECT_THROW(move(x, dest), RuntimeError);
  EXPECT_FALSE(c->is_released());
  EXPECT_EQ(slots(*dest), (std::vector<float>{9, 0, 0}));
  EXPECT_EQ(dest->version(), dv);
}

// ---------------------------------------------------------------- progress

TEST(Storage_MoveProgress, ReportsOncePerWindowAboveTheThreshold) {
  std::vector<MoveProgress> seen;
  MoveOptions o = windows_of(400);  // 100 slots
  o.progress_threshold_bytes = 4000;
  o.progress = [&](const MoveProgress& p) { seen.push_back(p); };
  move(cpu_tensor(iota(1000)), empty_file(), o);
  ASSERT_EQ(seen.size(), 10u);
  for (std::size_t k = 0; k < seen.size(); ++k) {
    EXPECT_EQ(seen[k].bytes_done, static_cast<std::int64_t>((k + 1) * 400));
    EXPECT_EQ(seen[k].bytes_total, 4000);
  }
  // The elementwise fallback reports per window too.
  seen.clear();
  move(cpu_tensor(iota(1000)), CPU::create(1000), o);
  ASSERT_EQ(seen.size(), 10u);
  EXPECT_EQ(seen.back().bytes_done, 4000);
}

TEST(Storage_MoveProgress, NotReportedBelowTheThreshold) {
  int calls = 0;
  MoveOptions o = windows_of(400);
  o.progress_threshold_bytes = 4001;
  o.progress = [&](const MoveProgress&) { ++calls; };
  move(cpu_tensor(iota(1000)), empty_file(), o);
  EXPECT_EQ(calls, 0);
}

TEST(Storage_MoveProgress, NeverReportedPastTheFailurePoint) {
  std::vector<std::int64_t> seen;
  MoveOptions o = windows_of(400);
  o.progress_threshold_bytes = 0;
  o.progress = [&](const MoveProgress& p) { seen.push_back(p.bytes_done); };
  MoveFaultIo io("write_at", 3, EIO);
  ScopedSystemIo scope(io);
  EXPECT_THROW(move(cpu_tensor(iota(1000)), empty_file(), o), OSError);
  EXPECT_EQ(seen, (std::vector<std::int64_t>{400, 800, 1200}));
}

TEST(Storage_MoveProgress, ACallbackThatThrowsFailsTheMoveAndRollsBack) {
  const Tensor x = cpu_tensor(iota(100));
  auto dest = empty_file();
  MoveOptions o = windows_of(40);
  o.progress_threshold_bytes = 0;
  o.progress = [](const MoveProgress& p) {
    if (p.bytes_done >= 120) throw ValueError("cancelled by the callback");
  };
  EXPECT_THROW(move(x, dest, o), ValueError);
  EXPECT_EQ(dest->size(), 0);
  EXPECT_FALSE(x.carrier()->is_released());
}

TEST(Storage_MoveProgress, BadOptionsAreValueErrors) {
  EXPECT_THROW(move(cpu_tensor({1}), CPU::create(1), windows_of(0)), ValueError);
}

// ---------------------------------------------------------------- asynchronous routes

// A route that finishes later: _copy copies nothing and hands back a
// pending completion; the test settles it (as an io_uring reaper would).
struct PendingMove final : MoveOperation {
  mutable std::optional<ext::ProviderPromise<void>> promise;
  mutable std::function<void()> finish_copy;
  std::string name() const override { return "PendingMove"; }

 protected:
  MoveSubmission _copy(const Tensor& tensor, Carrier& destination, const Tensor&, std::int64_t element_count,
                       MoveContext& context) const override {
    promise.emplace();
    finish_copy = [&tensor = tensor, &destination, element_count, &context] {
      for (std::int64_t k = 0; k < element_count; ++k)
        MoveContext::write(destination, k, MoveContext::read(*tensor.carrier(), tensor.offset() + k));
      context.advance(element_count);
    };
    return promise->completion();
  }
};

TEST(Storage_MoveAsync, APendingRouteCompletesLaterAndWaitIsIdempotentAcrossThreads) {
  auto op = std::make_shared<PendingMove>();
  ScopedMoveOperation scope(carrier_class<VecCarrier<13>>(), carrier_class<CPU>(), op);
  std::shared_ptr<VecCarrier<13>> c;
  const Tensor x = vec_tensor<13>({4, 5, 6}, &c);
  auto dest = CPU::create(3);
  AwaitMove<Tensor> pending = move_async(x, dest);
  EXPECT_FALSE(pending.done());
  EXPECT_FALSE(c->is_released());  // released only at commit
  op->finish_copy();
  op->promise->set_value();
  std::vector<std::optional<Tensor>> results(4);
  std::vector<std::thread> threads;
  for (auto& r : results) threads.emplace_back([&r, &pending] { r = pending.wait(); });
  for (auto& t : threads) t.join();
  EXPECT_TRUE(pending.done());
  for (const auto& r : results) {
    ASSERT_TRUE(r.has_value());
    EXPECT_TRUE(r->is(*results[0]));
  }
  EXPECT_EQ(floats(*results[0]), (std::vector<float>{4, 5, 6}));
  EXPECT_TRUE(c->is_released());
}

TEST(Storage_MoveAsync, DoneRecordsTheOutcomeOnceTheTransferFinished) {
  auto op = std::make_shared<PendingMove>();
  ScopedMoveOperation scope(carrier_class<VecCarrier<14>>(), carrier_class<CPU>(), op);
  std::shared_ptr<VecCarrier<14>> c;
  const Tensor x = vec_tensor<14>({1, 2}, &c);
  AwaitMove<Tensor> pending = move_async(x, CPU::create(2));
  op->finish_copy();
  op->promise->set_value();
  EXPECT_TRUE(pending.done());  // polling commits
  EXPECT_TRUE(c->is_released());
  EXPECT_EQ(floats(pending.wait()), (std::vector<float>{1, 2}));
}

TEST(Storage_MoveAsync, AFailedCompletionRollsBackAndEveryWaitRethrowsTheSameError) {
  auto op = std::make_shared<PendingMove>();
  ScopedMoveOperation scope(carrier_class<VecCarrier<15>>(), carrier_class<CPU>(), op);
  std::shared_ptr<VecCarrier<15>> c;
  const Tensor x = vec_tensor<15>({1, 2}, &c);
  auto dest = CPU::create(2);
  dest->set_value(1, F(8));
  const std::uint64_t dv = dest->version();
  AwaitMove<Tensor> pending = move_async(x, dest);
  op->finish_copy();  // the device wrote, then reported an error
  op->promise->set_exception(std::make_exception_ptr(OSError("device error (test)", EIO, "image", 0)));
  const OSError* first = nullptr;
  for (int k = 0; k < 2; ++k) {
    try {
      pending.wait();
      FAIL();
    } catch (const OSError& e) {
      if (!first) first = &e;
      EXPECT_EQ(&e, first);
    }
  }
  EXPECT_TRUE(pending.done());
  EXPECT_FALSE(c->is_released());
  EXPECT_EQ(slots(*dest), (std::vector<float>{0, 8}));
  EXPECT_EQ(dest->version(), dv);
}

TEST(Storage_MoveAsync, PollingDoneWhileOthersWaitSeesOneOutcome) {
  auto op = std::make_shared<PendingMove>();
  ScopedMoveOperation scope(carrier_class<VecCarrier<16>>(), carrier_class<CPU>(), op);
  std::shared_ptr<VecCarrier<16>> c;
  const Tensor x = vec_tensor<16>({1, 2, 3}, &c);
  AwaitMove<Tensor> pending = move_async(x, CPU::create(3));
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  std::vector<std::optional<Tensor>> waited(2);
  for (auto& w : waited) threads.emplace_back([&w, &pending, &go] {
    if (sw_testing::wait_until([&] { return go.load(); }, "the start signal")) w = pending.wait();
  });
  threads.emplace_back([&pending, &go] {
    if (sw_testing::wait_until([&] { return go.load(); }, "the start signal"))
      sw_testing::wait_until([&] { return pending.done(); }, "done() to report the settled move");
  });
  op->finish_copy();
  op->promise->set_value();
  go = true;
  for (auto& t : threads) t.join();
  ASSERT_TRUE(waited[0] && waited[1]);
  EXPECT_TRUE(waited[0]->is(*waited[1]));
  EXPECT_TRUE(c->is_released());
  EXPECT_EQ(c->version(), 0u);
}

TEST(Storage_MoveAsync, DroppingThePendingHandleNeitherCancelsNorBlocks) {
  auto op = std::make_shared<PendingMove>();
  ScopedMoveOperation scope(carrier_class<VecCarrier<17>>(), carrier_class<CPU>(), op);
  std::shared_ptr<VecCarrier<17>> c;
  const Tensor x = vec_tensor<17>({5, 6}, &c);
  auto dest = CPU::create(2);
  { AwaitMove<Tensor> dropped = move_async(x, dest); }  // returns at once: nothing waits here
  EXPECT_FALSE(c->is_released());
  op->finish_copy();
  op->promise->set_value();
  // The detached waiter commits: the source is released and then the
  // destination's version steps.
  ASSERT_TRUE(sw_testing::wait_until([&] { return c->is_released(); }, "the detached waiter to release the source"));
  ASSERT_TRUE(sw_testing::wait_until([&] { return dest->version() == 1; },
                                     "the detached waiter to step the destination's version to 1"));
  EXPECT_EQ(slots(*dest), (std::vector<float>{5, 6}));
}

TEST(Storage_MoveAsync, WritingTheSourceWhileTheMoveIsPendingFailsWaitWithTheSourceLiveAndTheDestinationRestored) {
  // docs/storage.md: the transaction commits only a source that did not
  // change while the transfer was in flight.
  auto op = std::make_shared<PendingMove>();
  ScopedMoveOperation scope(carrier_class<VecCarrier<18>>(), carrier_class<CPU>(), op);
  std::shared_ptr<VecCarrier<18>> c;
  const Tensor x = vec_tensor<18>({1, 2}, &c);
  auto dest = CPU::create(2);
  dest->set_value(0, F(7));
  dest->set_value(1, F(8));
  const std::uint64_t dv = dest->version();
  AwaitMove<Tensor> pending = move_async(x, dest);
  c->set_value(0, F(100));  // the source changes under the pending move
  op->finish_copy();        // the device copied (the new value, as it happens)
  op->promise->set_value();
  for (int k = 0; k < 2; ++k) {  // every wait reports the same failure
    try {
      pending.wait();
      ADD_FAILURE() << "wait() returned a result for a source written while the move was pending";
    } catch (const RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find("source carrier was written"), std::string::npos) << e.what();
    }
  }
  ASSERT_FALSE(c->is_released());
  EXPECT_EQ(slots(*c), (std::vector<float>{100, 2}));
  EXPECT_EQ(slots(*dest), (std::vector<float>{7, 8}));
  EXPECT_EQ(dest->version(), dv);
}

// A VecCarrier that counts its storage hook calls.
template <int N>
class CountingVec final : public VecCarrier<N> {
 public:
  using VecCarrier<N>::VecCarrier;
  mutable int reads = 0;
  int writes = 0;

 protected:
  Value read_slot(std::int64_t i) const override {
    ++reads;
    return VecCarrier<N>::read_slot(i);
  }
  void write_slot(std::int64_t i, const Value& v) override {
    ++writes;
    VecCarrier<N>::write_slot(i, v);
  }
};

TEST(Storage_MoveContext, AnIndexOutsideTheCarrierIsIndexErrorBeforeTheStorageHook) {
  // move_operation.h: MoveContext::read / write are "IndexError outside
  // [0, size())", checked before the un-versioned hook runs.
  auto d = std::make_shared<CountingVec<19>>(3);
  EXPECT_THROW(MoveContext::write(*d, 3, F(1)), IndexError);  // one past the end
  EXPECT_THROW(MoveContext::write(*d, -1, F(1)), IndexError);
  EXPECT_EQ(d->writes, 0);
  EXPECT_THROW(MoveContext::read(*d, 3), IndexError);
  EXPECT_THROW(MoveContext::read(*d, -1), IndexError);
  EXPECT_EQ(d->reads, 0);
  MoveContext::write(*d, 2, F(5));  // the last slot is in range
  EXPECT_EQ(d->writes, 1);
  EXPECT_EQ(MoveContext::read(*d, 2).f, 5.0f);
  EXPECT_EQ(d->version(), 0u);  // un-versioned
}

TEST(Storage_MoveAsync, ASynchronousRouteIsSettledWhenMoveAsyncReturns) {
  const Tensor x = cpu_tensor({1, 2});
  AwaitMove<Tensor> m = move_async(x, empty_file());
  EXPECT_TRUE(m.done());
  EXPECT_TRUE(x.carrier()->is_released());
  EXPECT_EQ(floats(m.wait()), (std::vector<float>{1, 2}));
}

// ---------------------------------------------------------------- definition-backed routes (R5)

template <int N>
class Arena final : public ext::DefinedCarrier {
 public:
  explicit Arena(ext::Construction key) : DefinedCarrier(std::move(key)) {}
  std::vector<Value> slots;
};

template <int N>
ext::StorageProvider arena_storage(bool elementwise_fallback) {
  using A = Arena<N>;
  return ext::StorageProvider(
      [](const Carrier&, const DType& d) { return &d == &DType::Float32(); },
      [](const Carrier& c) { return static_cast<std::int64_t>(static_cast<const A&>(c).slots.size()); },
      [](Carrier& c, std::int64_t n) { static_cast<A&>(c).slots.assign(static_cast<std::size_t>(n), F(0)); },
      [](Carrier& c) { static_cast<A&>(c).slots.clear(); },
      [](const Carrier& c, std::int64_t i) { return static_cast<const A&>(c).slots[static_cast<std::size_t>(i)]; },
      [](Carrier& c, std::int64_t i, const Value& v) { static_cast<A&>(c).slots[static_cast<std::size_t>(i)] = v; },
      elementwise_fallback);
}

template <int N>
Tensor arena_tensor(std::vector<float> values) {
  auto a = ext::create<Arena<N>>(static_cast<std::int64_t>(values.size()), DType::Float32());
  for (std::size_t i = 0; i < values.size(); ++i) a->slots[i] = F(values[i]);
  return Tensor(a, Shape::of({static_cast<std::int64_t>(values.size())}));
}

TEST(CarrierExtension_R5_TransferRoutes, ARouteForTheExactPairRunsAndTheFrameworkCommits) {
  static std::atomic<int> prepared{0}, submitted{0};
  static std::int64_t seen_span = -1;
  ext::TransferRoute route(
      carrier_class<Arena<1>>(), carrier_class<CPU>(), "arena-to-cpu",
      ext::TransferProvider([](const ext::TransferRequest& r) -> ext::TransferProvider::Prepared {
        ++prepared;
        seen_span = r.physical_span();
        const Tensor t = r.tensor();
        std::shared_ptr<Carrier> d = r.destination();
        return ext::PreparedTransfer([t, d]() -> ext::TransferSubmission {
          ++submitted;
          const auto& a = static_cast<const Arena<1>&>(*t.carrier());
          for (std::size_t k = 0; k < a.slots.size(); ++k) MoveContext::write(*d, static_cast<std::int64_t>(k), a.slots[k]);
          return std::monostate{};
        });
      }));
  ext::register_carrier_definition(carrier_class<Arena<1>>(),
                                   ext::CarrierDefinition(arena_storage<1>(false), std::nullopt, {route}));
  const Tensor x = arena_tensor<1>({1, 2, 3});
  auto dest = CPU::create(3);
  const Tensor y = move(x, dest);
  EXPECT_EQ(prepared.load(), 1);
  EXPECT_EQ(submitted.load(), 1);
  EXPECT_EQ(seen_span, 3);
  EXPECT_EQ(floats(y), (std::vector<float>{1, 2, 3}));
  EXPECT_TRUE(x.carrier()->is_released());
  EXPECT_EQ(dest->version(), 1u);
  // The legacy registry refuses a definition-backed pair (R5.6).
  EXPECT_THROW(register_move_operation(carrier_class<Arena<1>>(), carrier_class<Generic>(),
                                       std::make_shared<RecordingMove>()),
               RuntimeError);
}

TEST(CarrierExtension_R5_TransferRoutes, UnsupportedFallsBackOnlyWhenBothDefinitionsPermit) {
  auto unsupported = [](int) {
    return ext::TransferProvider(
        [](const ext::TransferRequest&) -> ext::TransferProvider::Prepared { return ext::Unsupported("not today"); });
  };
  ext::register_carrier_definition(
      carrier_class<Arena<2>>(),
      ext::CarrierDefinition(arena_storage<2>(true), std::nullopt,
                             {ext::TransferRoute(carrier_class<Arena<2>>(), carrier_class<CPU>(), "r", unsupported(0))}));
  const Tensor y = move(arena_tensor<2>({5, 6}), CPU::create(2));  // fallback permitted: elementwise
  EXPECT_EQ(floats(y), (std::vector<float>{5, 6}));

  ext::register_carrier_definition(
      carrier_class<Arena<3>>(),
      ext::CarrierDefinition(arena_storage<3>(false), std::nullopt,
                             {ext::TransferRoute(carrier_class<Arena<3>>(), carrier_class<CPU>(), "r", unsupported(0))}));
  const Tensor x = arena_tensor<3>({5, 6});
  auto dest = CPU::create(2);
  try {
    move(x, dest);
    FAIL();
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("not today"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(x.carrier()->is_released());
  EXPECT_EQ(dest->version(), 0u);
  // No route at all for (Arena<3>, Generic): NotImplementedError before anything changes.
  EXPECT_THROW(move(x, Generic::zeros(2, DType::Float32())), NotImplementedError);
  EXPECT_FALSE(x.carrier()->is_released());
}

TEST(CarrierExtension_R5_TransferRoutes, ARouteMayFinishLater) {
  static std::optional<ext::ProviderPromise<void>> promise;
  ext::TransferRoute route(
      carrier_class<Arena<4>>(), carrier_class<CPU>(), "later",
      ext::TransferProvider([](const ext::TransferRequest& r) -> ext::TransferProvider::Prepared {
        const Tensor t = r.tensor();
        std::shared_ptr<Carrier> d = r.destination();
        return ext::PreparedTransfer([t, d]() -> ext::TransferSubmission {
          promise.emplace();
          const auto& a = static_cast<const Arena<4>&>(*t.carrier());
          for (std::size_t k = 0; k < a.slots.size(); ++k) MoveContext::write(*d, static_cast<std::int64_t>(k), a.slots[k]);
          return promise->completion();
        });
      }));
  ext::register_carrier_definition(carrier_class<Arena<4>>(),
                                   ext::CarrierDefinition(arena_storage<4>(false), std::nullopt, {route}));
  const Tensor x = arena_tensor<4>({7, 8});
  AwaitMove<Tensor> m = move_async(x, CPU::create(2));
  EXPECT_FALSE(m.done());
  EXPECT_FALSE(x.carrier()->is_released());
  promise->set_value();
  EXPECT_EQ(floats(m.wait()), (std::vector<float>{7, 8}));
  EXPECT_TRUE(x.carrier()->is_released());
}

TEST(CarrierExtension_R5_TransferRoutes, ADefinitionFreeSourceIntoADefinitionBackedClassUsesThePermittedFallback) {
  ext::register_carrier_definition(carrier_class<Arena<5>>(), ext::CarrierDefinition(arena_storage<5>(true)));
  auto dest = ext::create<Arena<5>>(2, DType::Float32());
  const Tensor y = move(cpu_tensor({3, 4}), dest);
  EXPECT_EQ(dest->slots, (std::vector<Value>{F(3), F(4)}));
  EXPECT_EQ(floats(y), (std::vector<float>{3, 4}));
}

}  // namespace
