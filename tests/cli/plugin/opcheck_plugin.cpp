// A plugin for `strideweave check --plugin PATH --operation NAME`
// (tests/cli/test_cli_opcheck.py, docs/opcheck.md): a definition-backed
// carrier over its own arena and two user-defined operations, one whose
// kernel is right (cliplugin.double) and one whose kernel is wrong for
// negative inputs (cliplugin.broken), with their opcheck inputs.
#include <strideweave/strideweave.h>

#include <vector>

namespace {

using namespace strideweave;
namespace ext = strideweave::extension;
namespace op = strideweave::operation;

class CliArena final : public ext::DefinedCarrier {
 public:
  explicit CliArena(ext::Construction key) : DefinedCarrier(std::move(key)) {}
  std::vector<Value> arena;
};

class Iface final : public ext::KernelExecutionInterface {
 public:
  using KernelExecutionInterface::KernelExecutionInterface;
};

float read(const Tensor& t, std::int64_t i) { return t.carrier()->get_value(t.offset() + t.layout()(i)).f; }

Tensor mapped(const Tensor& x, const Carrier& like, float (*f)(float)) {
  std::vector<Value> v;
  for (std::int64_t i = 0; i < x.size(); ++i) v.push_back(Value::from_float32(f(read(x, i))));
  return Tensor(like.new_like(v, true, &DType::Float32()), 0, Layout::compact(x.shape()));
}
float twice(float v) { return 2 * v; }
float wrong(float v) { return v < 0 ? v : 2 * v; }

std::shared_ptr<const op::OperationDefinition> define(const char* name) {
  return op::define_operation(
      name, op::OperationSchema({op::OperandSpec("x", op::OperandKind::TENSOR, true)}),
      [](const op::BoundOperationCall& call) {
        const Tensor& x = call.tensor(0);
        OperationPlan plan(call.definition().name(), {OperandPlan::tensor(x.dtype())}, Arithmetic::BINARY32,
                           std::nullopt, nullptr, x.dtype());
        return op::ResolvedInvocation(call, plan, {op::ResultSpec::compact(x.dtype(), x.shape())});
      },
      op::ReferenceFn([](const op::ResolvedInvocation& inv) -> op::ReferenceResult {
        const Tensor& x = std::get<Tensor>(inv.operands()[0]);
        return mapped(x, *x.carrier(), twice);
      }),
      op::VjpFn([](const op::VJPContext&, std::span<const std::optional<Tensor>> cot) {
        return std::vector<std::optional<Tensor>>{mapped(*cot[0], *cot[0]->carrier(), twice)};
      }));
}

ext::KernelPattern pattern(const std::shared_ptr<const op::OperationDefinition>& d, const char* id, float (*f)(float)) {
  const OperationCapability plan = OperationCapability::from_plan(OperationPlan(
      d->name(), {OperandPlan::tensor(DType::Float32())}, Arithmetic::BINARY32, std::nullopt, nullptr, DType::Float32()));
  return ext::KernelPattern(d, {plan}, id,
                            [f](const op::ResolvedInvocation& inv,
                                const ext::KernelExecutionInterface& i) -> ext::KernelPattern::Prepared {
                              auto self = std::shared_ptr<const ext::KernelExecutionInterface>(std::shared_ptr<void>(), &i);
                              return ext::PreparedKernel(self, [f, inv = &inv]() -> ext::ResultSubmission {
                                const Tensor& x = std::get<Tensor>(inv->operands()[0]);
                                return ext::ProviderResult({mapped(x, *x.carrier(), f)});
                              });
                            });
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void strideweave_plugin_init() {
  const auto good = define("cliplugin.double");
  const auto broken = define("cliplugin.broken");
  ext::register_carrier_definition(
      carrier_class<CliArena>(),
      ext::CarrierDefinition(
          ext::StorageProvider(
              [](const Carrier&, const DType& d) { return &d == &DType::Float32(); },
              [](const Carrier& c) { return static_cast<std::int64_t>(static_cast<const CliArena&>(c).arena.size()); },
              [](Carrier& c, std::int64_t n) { static_cast<CliArena&>(c).arena.assign(static_cast<std::size_t>(n), Value::from_float32(0)); },
              [](Carrier& c) { static_cast<CliArena&>(c).arena.clear(); },
              [](const Carrier& c, std::int64_t i) { return static_cast<const CliArena&>(c).arena[static_cast<std::size_t>(i)]; },
              [](Carrier& c, std::int64_t i, const Value& v) { static_cast<CliArena&>(c).arena[static_cast<std::size_t>(i)] = v; }),
          ext::KernelProvider(std::make_shared<Iface>("1"), {pattern(good, "double", twice), pattern(broken, "wrong_for_negatives", wrong)})));
  const std::shared_ptr<Carrier> prototype = ext::create<CliArena>(0, DType::Float32());
  const std::vector<op::OpcheckSample> samples = {
      op::OpcheckSample{{op::SampleTensor{&DType::Float32(), Shape::of({2, 3})}}, {}, "matrix"}};
  op::register_opcheck_inputs(*good, samples, {prototype});
  op::register_opcheck_inputs(*broken, samples, {prototype});
}
