// The CUDA carrier (include/strideweave/carriers/cuda.h; docs/cuda.md):
// its class, its storage provider over device memory, its device -> CPU
// route, and its kernel provider, whose built-in patterns cover the
// built-in operation definitions. Public headers only, as an out-of-tree
// accelerator (examples/acme_accelerator).
#include <strideweave/carriers/cpu.h>
#include <strideweave/carriers/cuda.h>
#include <strideweave/errors.h>
#include <strideweave/extension.h>
#include <strideweave/operation.h>
#include <strideweave/policy.h>

#include <fmt/format.h>

#include <array>
#include <cstring>
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

// Per slot and per run: one synchronous copy each (a run is one copy of its
// bytes through a host buffer, converted there).
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
             // fallback, which writes each run through write_range below:
             // one host-to-device copy per run.
             /*elementwise_fallback=*/true)
      .with_ranges(
          [](const Carrier& c, std::int64_t first, std::span<Value> out) {
            const std::size_t eb = c.element_bytes();
            std::vector<std::byte> buffer(out.size() * eb);
            cc::copy_to_host(CudaStorageAccess::of(c).device(), buffer.data(), slot_address(c, first), buffer.size());
            for (std::size_t k = 0; k < out.size(); ++k) out[k] = decode(c.dtype(), buffer.data() + k * eb);
          },
          [](Carrier& c, std::int64_t first, std::span<const Value> values) {
            const std::size_t eb = c.element_bytes();
            std::vector<std::byte> buffer(values.size() * eb);
            for (std::size_t k = 0; k < values.size(); ++k) encode(c.dtype(), values[k], buffer.data() + k * eb);
            cc::copy_to_device(CudaStorageAccess::of(c).device(), slot_address(c, first), buffer.data(), buffer.size());
          },
          nullptr);  // device memory: the host cannot address it
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

const Tensor& tensor_at(const op::ResolvedInvocation& inv, std::size_t i) { return std::get<Tensor>(inv.operands()[i]); }

// Allocates the compact result on the operands' device, runs `launch` on
// it, and publishes it (the launch is queued on the stream; reading the
// result waits for it).
template <class Launch>
ext::ProviderResult launch_into_result(const op::ResolvedInvocation& inv, Launch launch) {
  const op::ResultSpec& spec = inv.results()[0];
  const int device = static_cast<const CUDA&>(*tensor_at(inv, 0).carrier()).device();
  std::shared_ptr<CUDA> out = ext::create<CUDA>(spec.shape().size(), spec.dtype(), true, device, /*empty=*/true);
  launch(device, out->device_data());
  return ext::ProviderResult({Tensor(out, spec.shape())});
}

// A pattern of the built-in `name` for `plans`, whose launch is
// launch(invocation, merged call, device, result memory).
template <std::size_t N, class Launch>
ext::KernelPattern elementwise_pattern(const char* name, const std::vector<OperationPlan>& plans, Launch launch) {
  std::vector<OperationCapability> caps;
  for (const OperationPlan& p : plans) caps.push_back(OperationCapability::from_plan(p));
  return ext::KernelPattern(
      op::get_definition(name), std::move(caps), fmt::format("cuda.{}", name),
      [launch](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface&) -> ext::KernelPattern::Prepared {
        std::array<const Tensor*, N> tensors{};
        for (std::size_t j = 0; j < N; ++j) tensors[j] = &tensor_at(inv, j);
        std::optional<cc::MergedCall<N>> merged = cc::merged_grid<N>(inv.results()[0].shape(), tensors);
        if (!merged)
          return ext::Unsupported(fmt::format("the CUDA kernels read at most {} strided modes per operand",
                                              cc::kMaxModes));
        return ext::PreparedKernel(interface_instance(), [&inv, launch, call = *merged]() -> ext::ResultSubmission {
          return launch_into_result(inv, [&](int device, void* out) { launch(inv, call, device, out); });
        });
      });
}

OperationPlan plan_of(std::string_view name, std::initializer_list<const SimpleDType*> dtypes) {
  std::vector<PlanOperand> operands;
  for (const SimpleDType* d : dtypes) operands.emplace_back(*d);
  return resolve_operation_plan(name, operands);
}

float option_float(const op::ResolvedInvocation& inv, std::string_view name, float fallback) {
  const auto& options = inv.options();
  auto it = options.find(name);
  if (it == options.end()) return fallback;
  if (const double* d = std::get_if<double>(&it->second)) return static_cast<float>(*d);
  if (const std::int64_t* i = std::get_if<std::int64_t>(&it->second)) return static_cast<float>(*i);
  return fallback;
}
bool option_bool(const op::ResolvedInvocation& inv, std::string_view name) {
  const auto& options = inv.options();
  auto it = options.find(name);
  const bool* b = it == options.end() ? nullptr : std::get_if<bool>(&it->second);
  return b && *b;
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

std::vector<ext::KernelPattern> builtin_patterns() {
  const SimpleDType* f = &DType::Float32();
  const SimpleDType* b = &DType::Bool();
  std::vector<ext::KernelPattern> patterns;
  for (const BinaryEntry& e : kBinary) {
    const cc::BinaryOp bop = e.op;
    patterns.push_back(elementwise_pattern<2>(
        e.name, {plan_of(e.name, {f, f})},
        [bop](const op::ResolvedInvocation&, const cc::MergedCall<2>& m, int device, void* out) {
          cc::launch_binary(device, bop, m.grid, m.operands[0], m.operands[1], out);
        }));
  }
  for (const UnaryEntry& e : kUnary) {
    const cc::UnaryOp uop = e.op;
    patterns.push_back(elementwise_pattern<1>(
        e.name, {plan_of(e.name, {f})},
        [uop](const op::ResolvedInvocation& inv, const cc::MergedCall<1>& m, int device, void* out) {
          cc::UnaryOptions o;
          o.alpha = option_float(inv, "alpha", o.alpha);
          o.slope = option_float(inv, "negative_slope", o.slope);
          o.beta = option_float(inv, "beta", o.beta);
          o.threshold = option_float(inv, "threshold", o.threshold);
          o.approximate = option_bool(inv, "approximate");
          cc::launch_unary(device, uop, o, m.grid, m.operands[0], static_cast<float*>(out));
        }));
  }
  patterns.push_back(elementwise_pattern<1>(
      "logical_not", {plan_of("logical_not", {f})},
      [](const op::ResolvedInvocation&, const cc::MergedCall<1>& m, int device, void* out) {
        cc::launch_logical_not(device, m.grid, m.operands[0], static_cast<bool*>(out));
      }));
  patterns.push_back(elementwise_pattern<3>(
      "clamp", {plan_of("clamp", {f, f, f})},
      [](const op::ResolvedInvocation&, const cc::MergedCall<3>& m, int device, void* out) {
        cc::launch_clamp(device, m.grid, m.operands[0], m.operands[1], m.operands[2], static_cast<float*>(out));
      }));
  patterns.push_back(elementwise_pattern<3>(
      "select", {plan_of("select", {b, f, f})},
      [](const op::ResolvedInvocation&, const cc::MergedCall<3>& m, int device, void* out) {
        cc::launch_select(device, m.grid, m.operands[0], m.operands[1], m.operands[2], static_cast<float*>(out));
      }));
  return patterns;
}

}  // namespace

// ---------------------------------------------------------------- the class

CudaKernelInterface::CudaKernelInterface() : KernelExecutionInterface("1.0") {}
void* CudaKernelInterface::stream(int device) const { return cc::stream(device); }

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
