// The CUDA carrier (include/strideweave/carriers/cuda.h; docs/cuda.md):
// its class, its storage provider over device memory, its device -> CPU
// route, and its kernel provider, whose built-in patterns cover the
// built-in operation definitions. Public headers only, as an out-of-tree
// accelerator (examples/acme_accelerator).
#include <strideweave/call.h>
#include <strideweave/carriers/cpu.h>
#include <strideweave/carriers/cuda.h>
#include <strideweave/errors.h>
#include <strideweave/extension.h>
#include <strideweave/operation.h>
#include <strideweave/policy.h>

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "extension_carriers/cuda/kernels.h"
#include "extension_carriers/cuda/runtime.h"
#include "extension_carriers/cuda/strided.h"

namespace strideweave {

namespace ext = extension;
namespace op = operation;
namespace cc = cuda_carrier;

// The storage provider's access to an instance's device memory.
struct CudaStorageAccess {
  static CUDA& of(Carrier& c) { return static_cast<CUDA&>(c); }
  static const CUDA& of(const Carrier& c) { return static_cast<const CUDA&>(c); }
  static void allocate(Carrier& c, std::int64_t slots) {
    CUDA& d = of(c);
    d.memory_ = cc::allocate(d.device_, static_cast<std::size_t>(slots) * c.element_bytes(), d.empty_);
    d.slots_ = slots;
  }
  static void release(Carrier& c) {
    CUDA& d = of(c);
    cc::release(d.device_, d.memory_);
    d.memory_ = nullptr;
    d.slots_ = 0;
  }
  static std::int64_t slots(const Carrier& c) { return of(c).slots_; }
};

namespace {

bool stored(const DType& d) { return &d == &DType::Float32() || &d == &DType::Int32() || &d == &DType::Bool(); }

// Slot bytes <-> Value, in the dtype's device representation (float,
// std::int32_t, one byte 0 or 1).
Value decode(const DType& dtype, const std::byte* p) {
  if (&dtype == &DType::Float32()) {
    float f;
    std::memcpy(&f, p, sizeof f);
    return Value::from_float32(f);
  }
  if (&dtype == &DType::Int32()) {
    std::int32_t i;
    std::memcpy(&i, p, sizeof i);
    return Value::from_int32(i);
  }
  return Value::from_bool(*p != std::byte{0});
}
void encode(const DType& dtype, const Value& v, std::byte* p) {
  if (&dtype == &DType::Float32()) std::memcpy(p, &v.f, sizeof v.f);
  else if (&dtype == &DType::Int32()) std::memcpy(p, &v.i, sizeof v.i);
  else *p = v.b ? std::byte{1} : std::byte{0};
}

std::byte* slot_address(const Carrier& c, std::int64_t first) {
  return static_cast<std::byte*>(CudaStorageAccess::of(c).device_data()) +
         static_cast<std::size_t>(first) * c.element_bytes();
}

// Per slot and per run: one synchronous copy each. Runs are the byte
// callbacks: the framework also serves Value runs (values(), read_values,
// fallback copies) through them, converting on the host.
ext::StorageProvider device_storage() {
  return ext::StorageProvider(
             [](const Carrier&, const DType& d) { return stored(d); },
             [](const Carrier& c) { return CudaStorageAccess::slots(c); }, &CudaStorageAccess::allocate,
             &CudaStorageAccess::release,
             [](const Carrier& c, std::int64_t i) {
               std::array<std::byte, 4> buffer{};
               cc::copy_to_host(CudaStorageAccess::of(c).device(), buffer.data(), slot_address(c, i), c.element_bytes());
               return decode(c.dtype(), buffer.data());
             },
             [](Carrier& c, std::int64_t i, const Value& v) {
               std::array<std::byte, 4> buffer{};
               encode(c.dtype(), v, buffer.data());
               cc::copy_to_device(CudaStorageAccess::of(c).device(), slot_address(c, i), buffer.data(), c.element_bytes());
             },
             // Moves from CPU (a definition-free class, whose routes cannot
             // name CUDA: carrier-extension R2.3) take the framework's
             // fallback, which writes each run through the byte callback
             // below: one host-to-device copy per run.
             /*elementwise_fallback=*/true)
      // Device memory: no host_data (the host cannot address it). Bytes: one
      // copy per run (moves from and to CPU, read_bytes, write_bytes, and the
      // Value runs the framework converts).
      .with_byte_ranges(
          [](const Carrier& c, std::int64_t first, std::int64_t count, std::byte* out) {
            cc::copy_to_host(CudaStorageAccess::of(c).device(), out, slot_address(c, first),
                             static_cast<std::size_t>(count) * c.element_bytes());
          },
          [](Carrier& c, std::int64_t first, std::int64_t count, const std::byte* data) {
            cc::copy_to_device(CudaStorageAccess::of(c).device(), slot_address(c, first), data,
                               static_cast<std::size_t>(count) * c.element_bytes());
          });
}

// CUDA -> CPU: the source's physical span, one device-to-host copy into the
// destination's host memory (the framework versions and commits).
std::vector<ext::TransferRoute> device_routes() {
  auto download = ext::TransferProvider([](const ext::TransferRequest& r) -> ext::TransferProvider::Prepared {
    return ext::PreparedTransfer([r]() -> ext::TransferSubmission {
      const auto& from = static_cast<const CUDA&>(*r.tensor().carrier());
      auto& to = static_cast<CPU&>(*r.destination());
      const std::size_t bytes = static_cast<std::size_t>(r.physical_span()) * from.element_bytes();
      cc::copy_to_host(from.device(), to.data<std::byte>(), slot_address(from, r.tensor().offset()), bytes);
      return std::monostate{};
    });
  });
  return {ext::TransferRoute(carrier_class<CUDA>(), carrier_class<CPU>(), "cuda.download", download)};
}

// ---------------------------------------------------------------- kernels

const std::shared_ptr<const CudaKernelInterface>& interface_instance() {
  static const auto i = std::make_shared<const CudaKernelInterface>();
  return i;
}

// A launch: the lowered call, the device, the result's device memory
// (kernel_shape's elements, compact, of the plan's output dtype).
using Launch = std::function<void(const BuiltinKernelCall& call, int device, void* out)>;
// Why the kernels cannot take this call (more modes or leaves than they
// read), or nullopt.
using Fits = std::function<std::optional<std::string>(const BuiltinKernelCall& call)>;

int device_of(const BuiltinKernelCall& call) {
  for (const KernelOperand& o : call.operands)
    if (const Tensor* t = std::get_if<Tensor>(&o)) return static_cast<const CUDA&>(*t->carrier()).device();
  throw RuntimeError("CUDA: a built-in call without a tensor operand");  // every lowering has one
}
const Tensor& tensor_of(const BuiltinKernelCall& call, std::size_t i) { return std::get<Tensor>(call.operands[i]); }

std::optional<std::string> too_large(const char* what) {
  return fmt::format("the CUDA kernels read at most {} modes and {} layout leaves per {}", cc::kMaxRank,
                     cc::kMaxLeaves, what);
}
// Every tensor operand as a View, and the kernel shape as Extents.
std::optional<std::string> views_fit(const BuiltinKernelCall& call) {
  for (const KernelOperand& o : call.operands)
    if (const Tensor* t = std::get_if<Tensor>(&o); t && !cc::view_of(*t)) return too_large("operand");
  if (!cc::extents_of(call.kernel_shape)) return too_large("result");
  return std::nullopt;
}
cc::View view(const BuiltinKernelCall& call, std::size_t i) { return *cc::view_of(tensor_of(call, i)); }
cc::Extents result_extents(const BuiltinKernelCall& call) { return *cc::extents_of(call.kernel_shape); }

// The pattern of the built-in `name` for `plans`: prepare lowers the call
// once (lower_builtin: the typed function's own broadcasting, scalars and
// options) and declines what the kernels cannot read; submit allocates the
// compact result on the operands' device, launches, and publishes it with
// the invocation's result shape (the kernel shape without its squeezed
// axes: the same elements in the same order).
ext::KernelPattern builtin_pattern(const std::string& name, std::vector<OperationCapability> plans, Fits fits,
                                   Launch launch) {
  return ext::KernelPattern(
      op::get_definition(name), std::move(plans), "cuda." + name,
      [fits, launch](const op::ResolvedInvocation& inv,
                     const ext::KernelExecutionInterface&) -> ext::KernelPattern::Prepared {
        auto call = std::make_shared<const BuiltinKernelCall>(lower_builtin(inv));
        if (std::optional<std::string> why = fits(*call)) return ext::Unsupported(*why);
        return ext::PreparedKernel(interface_instance(), [published = inv.results()[0].shape(), call,
                                                          launch]() -> ext::ResultSubmission {
          const int device = device_of(*call);
          std::shared_ptr<CUDA> out =
              ext::create<CUDA>(call->kernel_shape.size(), call->plan.output(), true, device, /*empty=*/true);
          launch(*call, device, out->device_data());
          return ext::ProviderResult({Tensor(out, published)});
        });
      });
}

// ---- elementwise: the merged grid of the lowered operands.

// The kernel shape's modes bound the merged grid's, and an operand with a
// hierarchical mode is read through its View (compact copy first), so both
// must fit.
template <std::size_t N>
Fits grid_fits() {
  return [](const BuiltinKernelCall& call) -> std::optional<std::string> {
    if (call.operands.size() != N) return fmt::format("expected {} operands", N);
    return views_fit(call);
  };
}
// An operand whose hierarchical mode does not coalesce to one stride is
// first copied compact on the device (one copy kernel; the copy is freed,
// after the launch, when the launcher returns).
template <std::size_t N, class F>
Launch on_grid(F f) {
  return [f](const BuiltinKernelCall& call, int device, void* out) {
    std::vector<KernelOperand> operands(call.operands.begin(), call.operands.end());
    std::vector<std::shared_ptr<CUDA>> copies;
    for (std::size_t round = 0; round <= N; ++round) {
      const std::optional<cc::MergedCall<N>> m = cc::merged_grid<N>(call.kernel_shape, operands);
      if (!m) throw RuntimeError("CUDA: an elementwise call with more modes than its pattern admitted");
      if (m->nested < 0) return f(call, *m, device, out);
      const Tensor& t = std::get<Tensor>(operands[static_cast<std::size_t>(m->nested)]);
      const Tensor view = std::ranges::equal(t.shape().extents(), call.kernel_shape.extents())
                              ? t
                              : t.broadcast_to(call.kernel_shape);
      const Shape flat = Shape::of(view.shape().extents());
      std::shared_ptr<CUDA> copy = ext::create<CUDA>(view.size(), view.dtype(), true, device, /*empty=*/true);
      cc::launch_copy(device, *cc::view_of(view), *cc::extents_of(flat), static_cast<int>(copy->element_bytes()),
                      copy->device_data());
      operands[static_cast<std::size_t>(m->nested)] = Tensor(copy, flat);
      copies.push_back(std::move(copy));
    }
    throw RuntimeError("CUDA: an elementwise operand stayed hierarchical after its compact copy");
  };
}

float attribute_float(const Attributes& a, const char* name, float fallback) {
  return a.has(name) ? static_cast<float>(a.get<double>(name)) : fallback;
}

struct BinaryEntry {
  const char* name;
  cc::BinaryOp op;
};
constexpr std::array kBinary{
    BinaryEntry{"add", cc::BinaryOp::add},         BinaryEntry{"sub", cc::BinaryOp::sub},
    BinaryEntry{"elementwise_mul", cc::BinaryOp::mul}, BinaryEntry{"mul", cc::BinaryOp::mul},
    BinaryEntry{"div", cc::BinaryOp::div},         BinaryEntry{"pow", cc::BinaryOp::pow},
    BinaryEntry{"rem", cc::BinaryOp::rem},         BinaryEntry{"maximum", cc::BinaryOp::maximum},
    BinaryEntry{"minimum", cc::BinaryOp::minimum}, BinaryEntry{"eq", cc::BinaryOp::eq},
    BinaryEntry{"ne", cc::BinaryOp::ne},           BinaryEntry{"lt", cc::BinaryOp::lt},
    BinaryEntry{"le", cc::BinaryOp::le},
};
struct UnaryEntry {
  const char* name;
  cc::UnaryOp op;
};
constexpr std::array kUnary{
    UnaryEntry{"relu", cc::UnaryOp::relu},       UnaryEntry{"elu", cc::UnaryOp::elu},
    UnaryEntry{"exp", cc::UnaryOp::exp},         UnaryEntry{"gelu", cc::UnaryOp::gelu},
    UnaryEntry{"leaky_relu", cc::UnaryOp::leaky_relu}, UnaryEntry{"sigmoid", cc::UnaryOp::sigmoid},
    UnaryEntry{"silu", cc::UnaryOp::silu},       UnaryEntry{"softplus", cc::UnaryOp::softplus},
    UnaryEntry{"tanh", cc::UnaryOp::tanh},       UnaryEntry{"neg", cc::UnaryOp::neg},
    UnaryEntry{"abs", cc::UnaryOp::abs},         UnaryEntry{"sign", cc::UnaryOp::sign},
    UnaryEntry{"recip", cc::UnaryOp::recip},     UnaryEntry{"sqrt", cc::UnaryOp::sqrt},
    UnaryEntry{"rsqrt", cc::UnaryOp::rsqrt},     UnaryEntry{"exp2", cc::UnaryOp::exp2},
    UnaryEntry{"log", cc::UnaryOp::log},         UnaryEntry{"log2", cc::UnaryOp::log2},
    UnaryEntry{"sin", cc::UnaryOp::sin},         UnaryEntry{"cos", cc::UnaryOp::cos},
    UnaryEntry{"erf", cc::UnaryOp::erf},         UnaryEntry{"floor", cc::UnaryOp::floor},
    UnaryEntry{"ceil", cc::UnaryOp::ceil},       UnaryEntry{"round", cc::UnaryOp::round},
};

// ---- the kernels of every operation name, by name.

struct Kernel {
  Fits fits;
  Launch launch;
};

cc::ReduceArgs reduce_args(const BuiltinKernelCall& call) {
  cc::ReduceArgs args;
  for (std::int64_t axis : call.attributes.get<std::vector<std::int64_t>>("axes"))
    args.reduced[static_cast<std::size_t>(axis)] = true;
  args.keepdims = call.attributes.get<bool>("keepdims");
  return args;
}
Kernel reduction(cc::ReduceOp op) {
  return {views_fit, [op](const BuiltinKernelCall& call, int device, void* out) {
            cc::launch_reduce(device, op, view(call, 0), reduce_args(call), result_extents(call), out);
          }};
}
Kernel sorting(bool topk, bool indices) {
  return {views_fit, [topk, indices](const BuiltinKernelCall& call, int device, void* out) {
            const std::int64_t axis = call.attributes.get<std::int64_t>("axis");
            const Tensor& x = tensor_of(call, 0);
            const bool descending = call.attributes.get<bool>(topk ? "largest" : "descending");
            const std::int64_t count = topk ? call.attributes.get<std::int64_t>("k")
                                            : x.shape().extent(static_cast<std::size_t>(axis));
            cc::launch_sort(device, view(call, 0), static_cast<int>(axis), descending, count, indices, out);
          }};
}
// gather, scatter and scatter_add check their indices first (IndexError,
// Generic's sentence, before anything is published).
void check_indices(const char* op, const BuiltinKernelCall& call, int device) {
  const std::int64_t axis = call.attributes.get<std::int64_t>("axis");
  const std::int64_t extent = tensor_of(call, 0).shape().extent(static_cast<std::size_t>(axis));
  std::int32_t value = 0;
  if (cc::first_bad_index(device, view(call, 1), extent, &value) >= 0)
    throw IndexError(fmt::format("{}: index {} is out of range for axis {} of extent {}", op, value, axis, extent));
}
Kernel scattering(bool add) {
  return {views_fit, [add](const BuiltinKernelCall& call, int device, void* out) {
            check_indices(add ? "scatter_add" : "scatter", call, device);
            cc::launch_scatter(device, view(call, 0), view(call, 1), view(call, 2),
                               static_cast<int>(call.attributes.get<std::int64_t>("axis")), add,
                               static_cast<float*>(out));
          }};
}

std::map<std::string, Kernel, std::less<>> kernels_by_name() {
  std::map<std::string, Kernel, std::less<>> k;
  for (const BinaryEntry& e : kBinary) {
    const cc::BinaryOp bop = e.op;
    k[e.name] = {grid_fits<2>(), on_grid<2>([bop](const BuiltinKernelCall&, const cc::MergedCall<2>& m, int device,
                                                  void* out) {
                   cc::launch_binary(device, bop, m.grid, m.operands[0], m.operands[1], out);
                 })};
  }
  for (const UnaryEntry& e : kUnary) {
    const cc::UnaryOp uop = e.op;
    k[e.name] = {grid_fits<1>(), on_grid<1>([uop](const BuiltinKernelCall& call, const cc::MergedCall<1>& m,
                                                  int device, void* out) {
                   cc::UnaryOptions o;
                   o.alpha = attribute_float(call.attributes, "alpha", o.alpha);
                   o.slope = attribute_float(call.attributes, "negative_slope", o.slope);
                   o.beta = attribute_float(call.attributes, "beta", o.beta);
                   o.threshold = attribute_float(call.attributes, "threshold", o.threshold);
                   o.approximate = call.attributes.has("approximate") && call.attributes.get<bool>("approximate");
                   cc::launch_unary(device, uop, o, m.grid, m.operands[0], static_cast<float*>(out));
                 })};
  }
  k["logical_not"] = {grid_fits<1>(), on_grid<1>([](const BuiltinKernelCall&, const cc::MergedCall<1>& m, int device,
                                                    void* out) {
                        cc::launch_logical_not(device, m.grid, m.operands[0], static_cast<bool*>(out));
                      })};
  k["clamp"] = {grid_fits<3>(), on_grid<3>([](const BuiltinKernelCall&, const cc::MergedCall<3>& m, int device,
                                              void* out) {
                  cc::launch_clamp(device, m.grid, m.operands[0], m.operands[1], m.operands[2],
                                   static_cast<float*>(out));
                })};
  k["select"] = {grid_fits<3>(), on_grid<3>([](const BuiltinKernelCall&, const cc::MergedCall<3>& m, int device,
                                               void* out) {
                   cc::launch_select(device, m.grid, m.operands[0], m.operands[1], m.operands[2],
                                     static_cast<float*>(out));
                 })};
  k["reduce_sum"] = reduction(cc::ReduceOp::sum);
  k["reduce_prod"] = reduction(cc::ReduceOp::prod);
  k["reduce_max"] = reduction(cc::ReduceOp::max);
  k["reduce_min"] = reduction(cc::ReduceOp::min);
  k["argmax"] = reduction(cc::ReduceOp::argmax);
  k["argmin"] = reduction(cc::ReduceOp::argmin);
  k["cumsum"] = {views_fit, [](const BuiltinKernelCall& call, int device, void* out) {
                   cc::launch_cumsum(device, view(call, 0), static_cast<int>(call.attributes.get<std::int64_t>("axis")),
                                     static_cast<float*>(out));
                 }};
  k["_sort_values"] = sorting(false, false);
  k["_sort_indices"] = sorting(false, true);
  k["_topk_values"] = sorting(true, false);
  k["_topk_indices"] = sorting(true, true);
  // The strict matmul: the carrier's own kernel (Generic's order, every
  // product rounded). The contracted one (BINARY32_FUSED, FLOATING: any
  // order within the summation bound): cuBLAS, else the fmaf kernel.
  k["matmul"] = {views_fit, [](const BuiltinKernelCall& call, int device, void* out) {
                   const bool fused = call.plan.compute() == Arithmetic::BINARY32_FUSED;
                   const cc::View a = view(call, 0), b = view(call, 1);
                   const cc::Extents result = result_extents(call);
                   if (fused && cc::matmul_cublas(device, a, b, result, static_cast<float*>(out))) return;
                   cc::launch_matmul(device, a, b, result, fused, static_cast<float*>(out));
                 }};
  k["conv_general"] = {views_fit, [](const BuiltinKernelCall& call, int device, void* out) {
                         cc::ConvArgs args;
                         const auto& stride = call.attributes.get<std::vector<std::int64_t>>("stride");
                         const auto& lo = call.attributes.get<std::vector<std::int64_t>>("padding_lo");
                         const auto& dilation = call.attributes.get<std::vector<std::int64_t>>("dilation");
                         args.spatial = static_cast<int>(stride.size());
                         for (std::size_t i = 0; i < stride.size(); ++i) {
                           args.stride[i] = stride[i];
                           args.padding_lo[i] = lo[i];
                           args.dilation[i] = dilation[i];
                         }
                         args.groups = call.attributes.get<std::int64_t>("groups");
                         cc::launch_conv(device, view(call, 0), view(call, 1), args, result_extents(call),
                                         static_cast<float*>(out));
                       }};
  k["gather"] = {views_fit, [](const BuiltinKernelCall& call, int device, void* out) {
                   check_indices("gather", call, device);
                   cc::launch_gather(device, view(call, 0), view(call, 1),
                                     static_cast<int>(call.attributes.get<std::int64_t>("axis")), result_extents(call),
                                     static_cast<float*>(out));
                 }};
  k["scatter"] = scattering(false);
  k["scatter_add"] = scattering(true);
  return k;
}

// The plans CUDA executes, derived from the registry: every executable plan
// whose tensor operands are Float32 (select's condition Bool, the index
// operand of gather and scatter Int32), whose weak scalars convert to
// Float32 and whose accumulator, if any, is Float32.
bool float32_family(const OperationPlan& plan) {
  const std::string& op = plan.operation();
  if (plan.accumulator_dtype() && plan.accumulator_dtype() != &DType::Float32()) return false;
  for (std::size_t i = 0; i < plan.operands().size(); ++i) {
    const OperandPlan& p = plan.operands()[i];
    if (p.role() == OperandRole::WEAK_SCALAR) {
      if (&p.convert_to() != &DType::Float32()) return false;
      continue;
    }
    const SimpleDType* d = p.dtype();
    const bool index = i == 1 && (op == "gather" || op == "scatter" || op == "scatter_add");
    const SimpleDType& wanted = op == "select" && i == 0 ? DType::Bool() : index ? DType::Int32() : DType::Float32();
    if (d != &wanted || &p.convert_to() != &wanted) return false;
  }
  return true;
}

std::vector<ext::KernelPattern> builtin_patterns() {
  std::map<std::string, std::vector<OperationCapability>, std::less<>> plans;
  for (const OperationPlan& plan : executable_plan_set()) {
    if (!float32_family(plan)) continue;
    plans[plan.operation()].push_back(OperationCapability::from_plan(plan));
    // 2.5 * x: the built-in definition's invocation lists the weak scalar
    // first (docs/policy.md, "mul(weak, tensor)"), which is the plan a
    // definition-backed class is gated on; lower_builtin hands the kernel the
    // registry's (tensor, weak_scalar) order.
    if (plan.operation() == "mul" && plan.operands().size() == 2 &&
        plan.operands()[1].role() == OperandRole::WEAK_SCALAR)
      plans["mul"].push_back(OperationCapability::from_plan(
          OperationPlan(plan.operation(), {plan.operands()[1], plan.operands()[0]}, plan.compute(),
                        plan.accumulation(), plan.accumulator_dtype(), plan.output())));
  }
  const std::map<std::string, Kernel, std::less<>> kernels = kernels_by_name();
  std::vector<ext::KernelPattern> patterns;
  for (auto& [name, caps] : plans) {
    auto it = kernels.find(name);
    if (it == kernels.end())
      throw RuntimeError(fmt::format("CUDA: the registry's Float32 plans of '{}' have no CUDA kernel", name));
    patterns.push_back(builtin_pattern(name, std::move(caps), it->second.fits, it->second.launch));
  }
  return patterns;
}

}  // namespace

// ---------------------------------------------------------------- the class

CudaKernelInterface::CudaKernelInterface() : KernelExecutionInterface("1.0") {}
void* CudaKernelInterface::stream(int device) const { return cc::launch_stream(device); }

CUDA::CUDA(ext::Construction key, int device, bool empty)
    : DefinedCarrier(std::move(key)), device_(device), empty_(empty) {}
CUDA::CUDA(ext::Construction key, const CUDA& prototype) : DefinedCarrier(std::move(key)), device_(prototype.device_) {}
CUDA::~CUDA() { cc::release(device_, memory_); }

std::shared_ptr<CUDA> CUDA::create(std::int64_t size, int device, bool mutable_, const DType& dtype, bool empty) {
  cc::require_device(device);  // core-concepts 8.3: before anything else
  return ext::create<CUDA>(size, dtype, mutable_, device, empty);
}

bool CUDA::built() noexcept { return cc::built(); }
int CUDA::device_count() noexcept { return cc::device_count(); }
std::string CUDA::unavailable_reason() { return cc::unavailable_reason(); }
const std::shared_ptr<const CudaKernelInterface>& CUDA::kernel_interface() { return interface_instance(); }

void register_cuda_definition() {
  ext::register_carrier_definition(
      carrier_class<CUDA>(),
      ext::CarrierDefinition(device_storage(), ext::KernelProvider(interface_instance(), builtin_patterns()),
                             device_routes()));
}

}  // namespace strideweave
