// Test support for the backend-capability suites (backend-capabilities.md,
// backend-capability-descriptor.md): small custom carriers and helpers.
//
// The class-level capability registry is global and permanent: a class that
// declared or was observed stays sealed for the whole test program. Every
// test therefore uses its OWN exact classes, made distinct by the template
// index N. Index ranges per file (so that no two tests share a class):
//   test_backend_capabilities.cpp   1 .. 199
//   test_execution_axes.cpp         200 .. 229, 250 .. 299
//   test_execution_axes_enforced.cpp 230 .. 249
//   test_capability_concurrency.cpp 300 .. 999
//   test_kernel_registration.cpp    1000 .. 1099
//   conformance/test_conformance.cpp 1100 .. 1199
//   test_capability_identity.cpp    1300 .. 1319
#pragma once

#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <unordered_set>
#include <vector>

namespace strideweave {

// GoogleTest prints records by their plan (found by ADL).
inline void PrintTo(const OperationCapability& c, std::ostream* os) {
  if (c.operands().empty()) {
    *os << "<OperationCapability '" << c.operation() << "' without operands>";
    return;
  }
  *os << c.to_plan().to_string();
}
inline void PrintTo(const ExecutionAxes& a, std::ostream* os) {
  *os << "axes(";
  for (ExecutionAxis axis : all_execution_axes()) *os << " " << name_of(axis) << "=" << name_of(a.level(axis));
  *os << " )";
}

}  // namespace strideweave

namespace sw_caps {

using namespace strideweave;

// A definition-free carrier storing one Value per slot, for every stored
// dtype (Float32, Int32, Bool). Not final: the concrete test classes derive
// from it; it is never declared or queried itself.
class ValueCarrier : public Carrier {
 public:
  ValueCarrier(const SimpleDType& dtype, std::vector<Value> values, bool mutable_)
      : Carrier(dtype, mutable_), values_(std::move(values)) {}
  bool supports_storage_dtype(const DType& d) const noexcept override { return stored_element_kind(d).has_value(); }
  // The carrier's own typed access for a test kernel (no version step; the
  // dispatcher versions a caller-provided output).
  Value peek(std::int64_t i) const { return values_[static_cast<std::size_t>(i)]; }
  void poke(std::int64_t i, const Value& v) { values_[static_cast<std::size_t>(i)] = v; }

 protected:
  std::int64_t storage_size() const noexcept override { return static_cast<std::int64_t>(values_.size()); }
  Value read_slot(std::int64_t i) const override { return values_[static_cast<std::size_t>(i)]; }
  void write_slot(std::int64_t i, const Value& v) override { values_[static_cast<std::size_t>(i)] = v; }
  void release_storage() noexcept override { values_.clear(); }
  std::shared_ptr<Carrier> make_like(std::int64_t size, bool mutable_, const SimpleDType& dtype,
                                     bool /*empty*/) const override {
    return make_same(dtype, std::vector<Value>(static_cast<std::size_t>(size), *storage_zero(dtype)), mutable_);
  }
  // Fresh storage of this exact class (and counts the allocation).
  virtual std::shared_ptr<Carrier> make_same(const SimpleDType& dtype, std::vector<Value> values,
                                             bool mutable_) const = 0;

 private:
  std::vector<Value> values_;
};

inline std::vector<Value> f32_values(std::initializer_list<float> fs) {
  std::vector<Value> out;
  for (float f : fs) out.push_back(Value::from_float32(f));
  return out;
}
inline std::vector<Value> i32_values(std::initializer_list<std::int32_t> is) {
  std::vector<Value> out;
  for (std::int32_t i : is) out.push_back(Value::from_int32(i));
  return out;
}

// A distinct final custom independent carrier per N, counting allocations.
template <int N>
class Custom final : public ValueCarrier {
 public:
  using ValueCarrier::ValueCarrier;
  static std::shared_ptr<Custom> make(const SimpleDType& dtype, std::vector<Value> values, bool mutable_ = true) {
    return std::make_shared<Custom>(dtype, std::move(values), mutable_);
  }
  static CarrierClass cls() { return carrier_class<Custom>(); }
  static inline std::atomic<int> allocations{0};

 protected:
  std::shared_ptr<Carrier> make_same(const SimpleDType& dtype, std::vector<Value> values,
                                     bool mutable_) const override {
    ++allocations;
    return std::make_shared<Custom>(dtype, std::move(values), mutable_);
  }
};

// A non-final base class and two final subclasses (siblings) per N.
template <int N>
class Base : public ValueCarrier {
 public:
  using ValueCarrier::ValueCarrier;

 protected:
  std::shared_ptr<Carrier> make_same(const SimpleDType& dtype, std::vector<Value> values,
                                     bool mutable_) const override {
    return std::make_shared<Base>(dtype, std::move(values), mutable_);
  }
};

template <int N>
class Sub final : public Base<N> {
 public:
  using Base<N>::Base;

 protected:
  std::shared_ptr<Carrier> make_same(const SimpleDType& dtype, std::vector<Value> values,
                                     bool mutable_) const override {
    return std::make_shared<Sub>(dtype, std::move(values), mutable_);
  }
};

template <int N>
class Sibling final : public Base<N> {
 public:
  using Base<N>::Base;

 protected:
  std::shared_ptr<Carrier> make_same(const SimpleDType& dtype, std::vector<Value> values,
                                     bool mutable_) const override {
    return std::make_shared<Sibling>(dtype, std::move(values), mutable_);
  }
};

// A legacy definition-free dependent carrier whose generator is configured
// per instance. `finalize_in_constructor` mirrors a concrete constructor;
// tests that need an unfinalised instance pass false and call finalize().
class TestDependent : public DependentCarrier {
 public:
  using Generator = std::function<std::vector<OperationCapability>()>;
  TestDependent(Generator generator, bool finalize_in_constructor, const SimpleDType& dtype = DType::Float32())
      : DependentCarrier(dtype, true), generator_(std::move(generator)), values_(4, *storage_zero(dtype)) {
    if (finalize_in_constructor) finalize_operation_capabilities();
  }
  void finalize() { finalize_operation_capabilities(); }
  void set_generator(Generator g) { generator_ = std::move(g); }
  int generator_calls() const { return calls_.load(); }
  bool supports_storage_dtype(const DType& d) const noexcept override { return stored_element_kind(d).has_value(); }
  static inline std::atomic<int> allocations{0};

 protected:
  std::vector<OperationCapability> _generate_operation_capabilities() const override {
    ++calls_;
    return generator_();
  }
  std::int64_t storage_size() const noexcept override { return static_cast<std::int64_t>(values_.size()); }
  Value read_slot(std::int64_t i) const override { return values_[static_cast<std::size_t>(i)]; }
  void write_slot(std::int64_t i, const Value& v) override { values_[static_cast<std::size_t>(i)] = v; }
  void release_storage() noexcept override { values_.clear(); }
  std::shared_ptr<Carrier> make_like(std::int64_t, bool, const SimpleDType&, bool) const override {
    ++allocations;
    throw RuntimeError("TestDependent: allocation is not expected in these tests");
  }

 private:
  Generator generator_;
  mutable std::atomic<int> calls_{0};
  std::vector<Value> values_;
};

// A dependent subclass that keeps the base (legacy) generator.
class DependentWithoutGenerator final : public DependentCarrier {
 public:
  DependentWithoutGenerator() : DependentCarrier(DType::Float32(), true) {}
  void finalize() { finalize_operation_capabilities(); }
  bool supports_storage_dtype(const DType& d) const noexcept override { return &d == &DType::Float32(); }

 protected:
  std::int64_t storage_size() const noexcept override { return 0; }
  Value read_slot(std::int64_t) const override { return Value::from_float32(0.0f); }
  void write_slot(std::int64_t, const Value&) override {}
  void release_storage() noexcept override {}
  std::shared_ptr<Carrier> make_like(std::int64_t, bool, const SimpleDType&, bool) const override {
    throw RuntimeError("DependentWithoutGenerator: no storage");
  }
};

// ---- plans

inline OperationPlan f32_add_plan() { return resolve_operation_plan("add", {DType::Float32(), DType::Float32()}); }
inline OperationPlan i32_add_plan() { return resolve_operation_plan("add", {DType::Int32(), DType::Int32()}); }
inline OperationPlan f32_mul_scalar_plan() { return resolve_operation_plan("mul", {DType::Float32(), WeakScalar(0.5)}); }
inline OperationPlan f32_relu_plan() { return resolve_operation_plan("relu", {DType::Float32()}); }
inline OperationPlan i32_relu_plan() { return resolve_operation_plan("relu", {DType::Int32()}); }

inline std::vector<OperationCapability> caps_of(std::initializer_list<OperationPlan> plans) {
  std::vector<OperationCapability> out;
  for (const OperationPlan& p : plans) out.push_back(OperationCapability::from_plan(p));
  return out;
}

inline std::vector<OperationPlan> plans_of(const std::vector<OperationCapability>& caps) {
  std::vector<OperationPlan> out;
  for (const OperationCapability& c : caps) out.push_back(c.to_plan());
  return out;
}

inline std::vector<OperationPlan> plans_of(std::span<const OperationCapability> caps) {
  std::vector<OperationPlan> out;
  for (const OperationCapability& c : caps) out.push_back(c.to_plan());
  return out;
}

inline std::unordered_set<OperationPlan> plan_set(const std::vector<OperationPlan>& plans) {
  return std::unordered_set<OperationPlan>(plans.begin(), plans.end());
}

inline std::vector<OperationCapability> sorted(std::vector<OperationCapability> caps) {
  std::sort(caps.begin(), caps.end());
  return caps;
}

}  // namespace sw_caps
