// acme: the accelerator (acme.h). Everything here uses strideweave's public
// headers only: the carrier extension surface (<strideweave/extension.h>)
// and the operation surface (<strideweave/operation.h>).
#include "acme.h"

#include <fmt/format.h>

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace acme {

namespace {

using namespace strideweave;
namespace ext = strideweave::extension;
namespace op = strideweave::operation;

// ---------------------------------------------------------------- the arena

// acme's device memory: blocks of Float32 slots, separate from every
// strideweave carrier's storage. Blocks never move once allocated; a block
// of 2 MiB or more is 2 MiB aligned and backed by huge pages where the
// system allows it (as a device's memory is mapped in large pages). Like a
// device's caching allocator, a freed block is kept (up to kCachedBytes in
// all, on a free list per size) and handed out again, zero-filled, for the
// next allocation of its size, so releasing a carrier does not return pages
// to the system. A Device owns its Block (RAII) and hands it back when it
// dies or is released.
class Arena {
 public:
  static constexpr std::size_t kCachedBytes = std::size_t{512} << 20;
  static constexpr std::size_t kHuge = std::size_t{2} << 20;

  struct FreeBlock {
    void operator()(float* p) const noexcept { std::free(p); }
  };
  struct Block {
    std::unique_ptr<float[], FreeBlock> memory;
    std::size_t count = 0;
  };

  Block allocate(std::int64_t slots) {
    const std::size_t count = static_cast<std::size_t>(slots);
    Block block;
    {
      std::lock_guard lock(mutex_);
      auto it = cached_.find(count);
      if (it != cached_.end() && !it->second.empty()) {
        block = std::move(it->second.back());
        it->second.pop_back();
        cached_bytes_ -= count * sizeof(float);
      }
    }
    if (!block.memory) block = make(count);
    std::fill_n(block.memory.get(), count, 0.0f);
    live_.fetch_add(1, std::memory_order_relaxed);
    return block;
  }
  void free(Block block) noexcept {
    if (!block.memory) return;
    live_.fetch_sub(1, std::memory_order_relaxed);
    const std::size_t bytes = block.count * sizeof(float);
    std::lock_guard lock(mutex_);
    if (bytes == 0 || cached_bytes_ + bytes > kCachedBytes) return;  // `block` frees its memory
    try {
      cached_[block.count].push_back(std::move(block));
      cached_bytes_ += bytes;
    } catch (...) {  // no room to keep it: it is freed instead
    }
  }
  std::size_t live() const noexcept { return live_.load(std::memory_order_relaxed); }

 private:
  static Block make(std::size_t count) {
    const std::size_t bytes = std::max<std::size_t>(count, 1) * sizeof(float);
    const std::size_t align = bytes >= kHuge ? kHuge : 64;
    void* p = std::aligned_alloc(align, (bytes + align - 1) / align * align);
    if (!p) throw std::bad_alloc();
    if (bytes >= kHuge) madvise(p, bytes, MADV_HUGEPAGE);  // a hint: no huge pages is fine
    return Block{std::unique_ptr<float[], FreeBlock>(static_cast<float*>(p)), count};
  }
  std::mutex mutex_;
  std::unordered_map<std::size_t, std::vector<Block>> cached_;  // by slot count
  std::size_t cached_bytes_ = 0;
  std::atomic<std::size_t> live_{0};
};
Arena& arena() {
  static Arena* a = new Arena();  // outlives every Device
  return *a;
}

// ---------------------------------------------------------------- the carrier

class Device final : public ext::DefinedCarrier {
 public:
  explicit Device(ext::Construction key) : DefinedCarrier(std::move(key)) {}
  ~Device() override { arena().free(std::move(block)); }  // per-instance resources are RAII (docs/extension.md)
  // The block, and its address and size as the allocation returned them (a
  // device carrier keeps its device pointer: no arena lookup, and no arena
  // lock, per access).
  Arena::Block block;
  float* memory = nullptr;
  std::int64_t slots = 0;
};

const Device& device_of(const Carrier& c) { return static_cast<const Device&>(c); }
float* memory_of(const Carrier& c) { return device_of(c).memory; }

ext::StorageProvider device_storage() {
  return ext::StorageProvider(
      [](const Carrier&, const DType& d) { return &d == &DType::Float32(); },
      [](const Carrier& c) { return device_of(c).slots; },
      [](Carrier& c, std::int64_t slots) {
        auto& d = static_cast<Device&>(c);
        d.block = arena().allocate(slots);
        d.memory = d.block.memory.get();
        d.slots = slots;
      },
      [](Carrier& c) {
        auto& d = static_cast<Device&>(c);
        arena().free(std::move(d.block));
        d.block = Arena::Block{};
        d.memory = nullptr;
        d.slots = 0;
      },
      [](const Carrier& c, std::int64_t i) { return Value::from_float32(memory_of(c)[i]); },
      [](Carrier& c, std::int64_t i, const Value& v) { memory_of(c)[i] = v.f; },
      // The arena's blocks are plain host memory, so the framework may move
      // values in and out without a route of acme's own ...
      /*elementwise_fallback=*/true)
      // ... and, given the block's address, it copies runs with memcpy
      // (moves to and from CPU, fallback copies; docs/storage.md, "Ranges").
      // A device whose memory the host cannot address would offer range
      // callbacks instead (one bulk copy per run: moves in from CPU through
      // the fallback) and declare its device -> CPU TransferRoute on its
      // definition (a definition's routes start at its class, R2.3).
      .with_ranges(nullptr, nullptr, [](const Carrier& c) -> void* { return memory_of(c); });
}

// acme's launch queue: the kernel execution interface of the provider and the pack.
class Queue final : public ext::KernelExecutionInterface {
 public:
  Queue() : KernelExecutionInterface("1.0") {}
};
const std::shared_ptr<const Queue>& queue() {
  static const auto q = std::make_shared<const Queue>();
  return q;
}

// ---------------------------------------------------------------- the operation

float relu(float v) { return v > 0.0f ? v : 0.0f; }  // NaN -> 0, -0 -> +0

// Element (i, j) of a rank-2 tensor (any layout), or element i of a rank-1 one.
float at2(const Tensor& t, std::int64_t i, std::int64_t j) { return t.at({i, j}).f; }
float at1(const Tensor& t, std::int64_t i) { return t.at({i}).f; }

struct Dims {
  std::int64_t m, k, n;
};
Dims dims_of(const op::ResolvedInvocation& inv) {
  const Tensor& x = std::get<Tensor>(inv.operands()[0]);
  const Tensor& w = std::get<Tensor>(inv.operands()[1]);
  return {x.shape().extent(0), x.shape().extent(1), w.shape().extent(1)};
}

op::ResolvedInvocation resolve(const op::BoundOperationCall& call) {
  const std::string& name = call.definition().name();
  const Tensor &x = call.tensor(0), &w = call.tensor(1), &b = call.tensor(2);
  for (const Tensor* t : {&x, &w, &b})
    if (&t->dtype() != &DType::Float32())
      throw TypeError(fmt::format("{}: every operand must be float32, got {}", name, t->dtype().name()));
  if (x.rank() != 2 || w.rank() != 2 || b.rank() != 1)
    throw ValueError(fmt::format("{}: x (m, k), w (k, n) and b (n) expected, got {}, {}, {}", name,
                                 x.shape().to_string(), w.shape().to_string(), b.shape().to_string()));
  const std::int64_t m = x.shape().extent(0), k = x.shape().extent(1), n = w.shape().extent(1);
  if (w.shape().extent(0) != k || b.shape().extent(0) != n)
    throw ValueError(fmt::format("{}: shapes {}, {}, {} do not chain", name, x.shape().to_string(),
                                 w.shape().to_string(), b.shape().to_string()));
  const SimpleDType& f = DType::Float32();
  OperationPlan plan(name, {OperandPlan::tensor(f), OperandPlan::tensor(f), OperandPlan::tensor(f)},
                     Arithmetic::BINARY32, std::nullopt, nullptr, f);
  // Every kernel sums over k in order, so results agree exactly; the
  // tolerance leaves room for a future kernel that blocks k.
  return op::ResolvedInvocation(call, plan, {op::ResultSpec::compact(f, Shape::of({m, n}), 1e-5, 1e-5)}, {},
                                /*saved_operands=*/{0, 1});
}

// The meaning: y[i, j] = relu(sum_p x[i, p] * w[p, j] + b[j]), summed in p order.
op::ReferenceResult reference(const op::ResolvedInvocation& inv) {
  const Tensor& x = std::get<Tensor>(inv.operands()[0]);
  const Tensor& w = std::get<Tensor>(inv.operands()[1]);
  const Tensor& b = std::get<Tensor>(inv.operands()[2]);
  const auto [m, k, n] = dims_of(inv);
  std::vector<Value> y(static_cast<std::size_t>(m * n));
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      float acc = 0.0f;
      for (std::int64_t p = 0; p < k; ++p) acc += at2(x, i, p) * at2(w, p, j);
      y[static_cast<std::size_t>(i + m * j)] = Value::from_float32(relu(acc + at1(b, j)));
    }
  return Tensor(x.carrier()->new_like(y), Shape::of({m, n}));
}

// dz = cot * (y > 0); dx = dz w^T; dw = x^T dz; db = sum_i dz.
std::vector<std::optional<Tensor>> vjp(const op::VJPContext& ctx, std::span<const std::optional<Tensor>> cot) {
  if (!cot[0]) return {std::nullopt, std::nullopt, std::nullopt};
  const Tensor& x = ctx.saved_operands()[0];
  const Tensor& w = ctx.saved_operands()[1];
  const Tensor& y = ctx.outputs()[0];
  const auto [m, k, n] = dims_of(ctx.invocation());
  std::vector<float> dz(static_cast<std::size_t>(m * n));
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i)
      dz[static_cast<std::size_t>(i + m * j)] = at2(y, i, j) > 0.0f ? at2(*cot[0], i, j) : 0.0f;
  const auto z = [&](std::int64_t i, std::int64_t j) { return dz[static_cast<std::size_t>(i + m * j)]; };
  std::vector<Value> dx(static_cast<std::size_t>(m * k)), dw(static_cast<std::size_t>(k * n)),
      db(static_cast<std::size_t>(n));
  for (std::int64_t p = 0; p < k; ++p)
    for (std::int64_t i = 0; i < m; ++i) {
      float acc = 0.0f;
      for (std::int64_t j = 0; j < n; ++j) acc += z(i, j) * at2(w, p, j);
      dx[static_cast<std::size_t>(i + m * p)] = Value::from_float32(acc);
    }
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t p = 0; p < k; ++p) {
      float acc = 0.0f;
      for (std::int64_t i = 0; i < m; ++i) acc += at2(x, i, p) * z(i, j);
      dw[static_cast<std::size_t>(p + k * j)] = Value::from_float32(acc);
    }
  for (std::int64_t j = 0; j < n; ++j) {
    float acc = 0.0f;
    for (std::int64_t i = 0; i < m; ++i) acc += z(i, j);
    db[static_cast<std::size_t>(j)] = Value::from_float32(acc);
  }
  const Carrier& like = *cot[0]->carrier();
  return {Tensor(like.new_like(dx), Shape::of({m, k})), Tensor(like.new_like(dw), Shape::of({k, n})),
          Tensor(like.new_like(db), Shape::of({n}))};
}

// ---------------------------------------------------------------- the kernels

// A rank-2 operand's element strides (0 for a broadcast mode), read from its layout.
struct View2 {
  const float* base;
  std::int64_t s0, s1;
  float operator()(std::int64_t i, std::int64_t j) const { return base[i * s0 + j * s1]; }
};
std::int64_t stride_of(const Tensor& t, std::size_t axis) {
  return t.shape().extent(axis) > 1 ? t.layout().mode_index(axis, 1) - t.layout().mode_index(axis, 0) : 0;
}
View2 view2(const Tensor& t) {
  return {memory_of(*t.carrier()) + t.offset(), stride_of(t, 0), stride_of(t, 1)};
}

// Allocates the compact (m, n) result on the device and runs `body` on its slots.
template <class Body>
ext::ProviderResult launch(const op::ResolvedInvocation& inv, Body body) {
  const auto [m, k, n] = dims_of(inv);
  const Tensor& x = std::get<Tensor>(inv.operands()[0]);
  const Tensor& w = std::get<Tensor>(inv.operands()[1]);
  const Tensor& b = std::get<Tensor>(inv.operands()[2]);
  const View2 xv = view2(x), wv = view2(w);
  const float* bb = memory_of(*b.carrier()) + b.offset();
  const std::int64_t bs = stride_of(b, 0);
  std::shared_ptr<Device> out = ext::create<Device>(m * n, DType::Float32());
  body(out->memory, xv, wv, bb, bs, m, k, n);
  return ext::ProviderResult({Tensor(out, Shape::of({m, n}))});
}

// acme.generic: one output element at a time.
void generic_body(float* y, const View2& x, const View2& w, const float* b, std::int64_t bs, std::int64_t m,
                  std::int64_t k, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t i = 0; i < m; ++i) {
      float acc = 0.0f;
      for (std::int64_t p = 0; p < k; ++p) acc += x(i, p) * w(p, j);
      y[i + m * j] = relu(acc + b[j * bs]);
    }
}

// acme.tiled: 2x2 register tiles (m and n even), four accumulators per p.
void tiled_body(float* y, const View2& x, const View2& w, const float* b, std::int64_t bs, std::int64_t m,
                std::int64_t k, std::int64_t n) {
  for (std::int64_t j = 0; j < n; j += 2)
    for (std::int64_t i = 0; i < m; i += 2) {
      float a00 = 0, a01 = 0, a10 = 0, a11 = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        const float x0 = x(i, p), x1 = x(i + 1, p), w0 = w(p, j), w1 = w(p, j + 1);
        a00 += x0 * w0;
        a10 += x1 * w0;
        a01 += x0 * w1;
        a11 += x1 * w1;
      }
      y[i + m * j] = relu(a00 + b[j * bs]);
      y[i + 1 + m * j] = relu(a10 + b[j * bs]);
      y[i + m * (j + 1)] = relu(a01 + b[(j + 1) * bs]);
      y[i + 1 + m * (j + 1)] = relu(a11 + b[(j + 1) * bs]);
    }
}

// acme.add: the built-in add on two Float32 operands (any layouts, either
// broadcast to the other's shape): element i of the compact result
// is x[i] + y[i] in logical order, the single binary32 addition the plan
// names, so it agrees with every shipped carrier bit for bit.
ext::ProviderResult launch_add(const op::ResolvedInvocation& inv) {
  const Shape& shape = inv.results()[0].shape();
  // The invocation holds the call's operands; broadcasting is the built-in
  // definition's (broadcast_to gives each one the result's shape as a view).
  const auto as_result = [&](const Tensor& t) { return t.shape() == shape ? t : t.broadcast_to(shape); };
  const Tensor x = as_result(std::get<Tensor>(inv.operands()[0]));
  const Tensor y = as_result(std::get<Tensor>(inv.operands()[1]));
  const std::int64_t n = shape.size();
  std::shared_ptr<Device> out = ext::create<Device>(n, DType::Float32());
  float* o = out->memory;
  const Layout compact = Layout::compact(shape);
  const auto compact_at_zero = [&](const Tensor& t) { return t.offset() == 0 && t.layout() == compact; };
  if (compact_at_zero(x) && compact_at_zero(y)) {
    const float* a = memory_of(*x.carrier());
    const float* b = memory_of(*y.carrier());
    for (std::int64_t i = 0; i < n; ++i) o[i] = a[i] + b[i];
  } else {
    const float* a = memory_of(*x.carrier());
    const float* b = memory_of(*y.carrier());
    for (std::int64_t i = 0; i < n; ++i) o[i] = a[x.offset() + x.layout()(i)] + b[y.offset() + y.layout()(i)];
  }
  return ext::ProviderResult({Tensor(out, shape)});
}

std::shared_ptr<const op::OperationDefinition>& definition_slot() {
  static std::shared_ptr<const op::OperationDefinition> d;
  return d;
}

void register_once() {
  const auto d = op::define_operation(
      "acme.fused_linear",
      op::OperationSchema({op::OperandSpec("x", op::OperandKind::TENSOR, true),
                           op::OperandSpec("w", op::OperandKind::TENSOR, true),
                           op::OperandSpec("b", op::OperandKind::TENSOR, true)}),
      resolve, op::ReferenceFn(reference), op::VjpFn(vjp));
  definition_slot() = d;
  const SimpleDType& f = DType::Float32();
  const OperationCapability plan = OperationCapability::from_plan(
      OperationPlan(d->name(), {OperandPlan::tensor(f), OperandPlan::tensor(f), OperandPlan::tensor(f)},
                    Arithmetic::BINARY32, std::nullopt, nullptr, f));
  ext::KernelPattern tiled(
      d, {plan}, "acme.tiled",
      [](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface&) -> ext::KernelPattern::Prepared {
        const auto [m, k, n] = dims_of(inv);
        if (m % 2 != 0 || n % 2 != 0)
          return ext::Unsupported(fmt::format("acme.tiled needs even m and n for its 2x2 tiles (m={}, n={})", m, n));
        return ext::PreparedKernel(queue(), [&inv]() -> ext::ResultSubmission { return launch(inv, tiled_body); });
      },
      /*preference=*/10);
  ext::KernelPattern generic(
      d, {plan}, "acme.generic",
      [](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface&) -> ext::KernelPattern::Prepared {
        // Submitted asynchronously: the result arrives through a completion.
        return ext::PreparedKernel(queue(), [&inv]() -> ext::ResultSubmission {
          return ext::ProviderCompletion<ext::ProviderResult>::deferred([&inv] { return launch(inv, generic_body); });
        });
      },
      /*preference=*/0);
  // The built-in add, through the same extension surface (issue 20: a typed
  // add on an extension carrier takes the one pipeline; bench/run's
  // add_1_acme_typed measures it beside CPU's typed add).
  const OperationPlan add_plan = resolve_operation_plan("add", {DType::Float32(), DType::Float32()});
  ext::KernelPattern add(
      op::get_definition("add"), {OperationCapability::from_plan(add_plan)}, "acme.add",
      [](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface&) -> ext::KernelPattern::Prepared {
        return ext::PreparedKernel(queue(), [&inv]() -> ext::ResultSubmission { return launch_add(inv); });
      },
      /*preference=*/0);
  ext::register_carrier_definition(carrier_class<Device>(),
                                   ext::CarrierDefinition(device_storage(), ext::KernelProvider(queue())));
  ext::register_kernel_pack(ext::KernelPack("acme", "1.0", carrier_class<Device>(), queue(), {tiled, generic, add}));
  // What `strideweave check --operation acme.fused_linear` checks: one
  // sample with odd m and n (acme.tiled declines), one with even ones; each
  // symbolic dimension has its own extent, so every one is emptied in turn.
  op::register_opcheck_inputs(
      *d,
      {op::OpcheckSample{{op::SampleTensor{&f, Shape::of({3, 4})}, op::SampleTensor{&f, Shape::of({4, 5})},
                          op::SampleTensor{&f, Shape::of({5})}},
                         {}, "odd m, n"},
       op::OpcheckSample{{op::SampleTensor{&f, Shape::of({2, 3})}, op::SampleTensor{&f, Shape::of({3, 4})},
                          op::SampleTensor{&f, Shape::of({4})}},
                         {}, "even m, n"}},
      {ext::create<Device>(0, f)});
}

}  // namespace

void register_acme() {
  static std::once_flag once;
  std::call_once(once, register_once);
}

std::shared_ptr<const op::OperationDefinition> fused_linear() {
  register_acme();
  return definition_slot();
}

Tensor device_tensor(const std::vector<float>& values, const Shape& shape) {
  register_acme();
  std::shared_ptr<Device> d = ext::create<Device>(static_cast<std::int64_t>(values.size()), DType::Float32());
  std::copy(values.begin(), values.end(), d->memory);
  return Tensor(d, shape);
}

std::shared_ptr<Carrier> device_carrier(std::int64_t slots) {
  register_acme();
  return ext::create<Device>(slots, DType::Float32());
}

std::size_t live_blocks() { return arena().live(); }

}  // namespace acme

extern "C" void strideweave_plugin_init() { acme::register_acme(); }
