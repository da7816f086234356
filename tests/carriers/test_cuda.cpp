// The CUDA carrier (issue 23; include/strideweave/carriers/cuda.h,
// docs/cuda.md). The suites named CUDA_NoDevice run everywhere; the
// CUDA_Device suites need a device and skip with one message otherwise
// (scripts/device-check runs them on a lent GPU).
//
// Requirements named: core-concepts 8.3 (the accelerator's construction,
// RuntimeError without a runtime), backend-capabilities (sealed exact-class
// set, "Cover the complete Metal dispatch-name set": the covered part),
// carrier-extension R2.3/R10 (definition-backed, pack-eligible),
// backend-capability-descriptor (the rendered table).
#include <strideweave/carriers/cuda.h>
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include "conformance/harness.h"

#include <atomic>
#include <fstream>
#include <set>
#include <sstream>

namespace {

using namespace strideweave;

constexpr const char* kNoDevice = "no CUDA device in this process (CUDA::unavailable_reason() says why); "
                                  "scripts/device-check runs these on a lent GPU";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// ---------------------------------------------------------------- without a device

TEST(CUDA_NoDevice, Issue23_ConstructionIsRuntimeErrorWithoutARuntimeOrDevice_CoreConcepts_8_3) {
  if (CUDA::device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  const std::string reason = CUDA::unavailable_reason();
  ASSERT_FALSE(reason.empty());
  if (!CUDA::built()) {
    EXPECT_EQ(reason, "strideweave was built without the CUDA toolkit");
  }
  try {
    CUDA::create(4);
    FAIL() << "CUDA::create succeeded without a device";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
  }
  // The runtime is checked first: the framework's own checks (size, dtype)
  // never run without it.
  EXPECT_THROW(CUDA::create(-1), RuntimeError);
  EXPECT_THROW(CUDA::create(4, 0, true, DType::Float64()), RuntimeError);
}

TEST(CUDA_NoDevice, Issue23_AnAbsentDeviceIndexIsRuntimeError) {
  const int count = CUDA::device_count();
  EXPECT_GE(count, 0);
  EXPECT_THROW(CUDA::create(4, count), RuntimeError);
  EXPECT_THROW(CUDA::create(4, -1), RuntimeError);
}

TEST(CUDA_NoDevice, Issue23_DefinitionBackedIndependentClassNamedCUDA_CarrierExtension_R2_3) {
  const CarrierClass cls = carrier_class<CUDA>();
  EXPECT_EQ(cls.name(), "CUDA");
  EXPECT_TRUE(cls.traits().derives_carrier);
  EXPECT_TRUE(cls.traits().storage_provider);
  EXPECT_FALSE(cls.traits().is_dependent);
  EXPECT_EQ(CUDA::kernel_interface()->version(), "1.0");
  EXPECT_EQ(CUDA::kernel_interface()->compatibility_identity().type, std::type_index(typeid(CudaKernelInterface)));
}

TEST(CUDA_NoDevice, Issue23_SealedAgainstPublicCapabilityRegistration_BackendCapabilities) {
  const CarrierClass cls = carrier_class<CUDA>();
  const std::vector<OperationCapability> before = capabilities_for_carrier_class(cls);
  const std::vector<OperationCapability> more{
      OperationCapability::from_plan(resolve_operation_plan("add", {DType::Int32(), DType::Int32()}))};
  EXPECT_THROW(register_operation_capabilities(cls, more), TypeError);
  EXPECT_EQ(capabilities_for_carrier_class(cls), before);  // nothing half-registered
}

// Every entry is the policy's plan of its operation for its operand dtypes
// (the patterns name resolvable plans, never a nearby one), and the axes are
// a definition-backed class's defaults.
TEST(CUDA_NoDevice, Issue23_EveryCapabilityIsTheCentralPlanOfItsOperation) {
  const CarrierClass cls = carrier_class<CUDA>();
  const std::vector<OperationCapability> caps = capabilities_for_carrier_class(cls);
  ASSERT_FALSE(caps.empty());
  for (const OperationCapability& c : caps) {
    bool found = false;
    for (const OperationPlan& plan : executable_plan_set())
      if (OperationCapability::from_plan(plan) == c) found = true;
    // mul(weak_scalar, tensor): the registry's (tensor, weak_scalar) plan
    // with its operands in the call's order.
    const bool scalar_first_mul = c.operation() == "mul" && c.operands()[0].role() == OperandRole::WEAK_SCALAR;
    EXPECT_TRUE(found || scalar_first_mul) << c.operation() << ": not a plan of the registry";
    EXPECT_EQ(execution_axes(cls, c), ExecutionAxes{}) << c.operation();
  }
}

// backend-capabilities, "Cover the complete Metal dispatch-name set" (CUDA
// in Metal's role): every computational operation name the central registry
// registers has at least one CUDA capability.
TEST(CUDA_NoDevice, Issue23_EveryRegisteredOperationNameHasAPlan_BackendCapabilities) {
  std::set<std::string> names;
  for (const OperationCapability& c : capabilities_for_carrier_class(carrier_class<CUDA>())) names.insert(c.operation());
  ASSERT_FALSE(registered_operations().empty());
  for (const OperationSpec& spec : registered_operations())
    EXPECT_TRUE(names.count(spec.name())) << "CUDA has no plan for the registered operation '" << spec.name() << "'";
}

// The set is the registry's Float32 family, derived here independently of
// the carrier: every executable plan whose tensor operands are Float32
// (select's condition Bool, the index operand of gather and scatter Int32),
// whose weak scalars convert to Float32 and whose accumulator, if any, is
// Float32; nothing else (a plan outside it is refused by the gate with the
// stable sentence).
TEST(CUDA_NoDevice, Issue23_TheCapabilitySetIsTheRegistrysFloat32Family) {
  const CarrierClass cls = carrier_class<CUDA>();
  std::size_t expected = 0;
  for (const OperationPlan& plan : executable_plan_set()) {
    const std::string& op = plan.operation();
    bool in = !plan.accumulator_dtype() || plan.accumulator_dtype() == &DType::Float32();
    for (std::size_t i = 0; i < plan.operands().size() && in; ++i) {
      const OperandPlan& p = plan.operands()[i];
      const SimpleDType* wanted = &DType::Float32();
      if (op == "select" && i == 0) wanted = &DType::Bool();
      if (i == 1 && (op == "gather" || op == "scatter" || op == "scatter_add")) wanted = &DType::Int32();
      in = (p.role() == OperandRole::WEAK_SCALAR || p.dtype() == wanted) && &p.convert_to() == wanted;
    }
    EXPECT_EQ(supports_operation_plan(cls, plan), in) << plan.to_string();
    expected += in ? 1 : 0;
    if (!in) {
      EXPECT_TRUE(unsupported_plan_reason(cls, plan).has_value()) << plan.to_string();
    }
  }
  // ... and 2.5 * x, whose invocation lists the weak scalar first
  // (docs/policy.md, "mul(weak, tensor)").
  const OperationPlan tensor_scalar = resolve_operation_plan("mul", {PlanOperand(DType::Float32()), PlanOperand(2.5)});
  const OperationPlan scalar_first("mul", {tensor_scalar.operands()[1], tensor_scalar.operands()[0]},
                                   tensor_scalar.compute(), tensor_scalar.accumulation(),
                                   tensor_scalar.accumulator_dtype(), tensor_scalar.output());
  EXPECT_TRUE(supports_operation_plan(cls, scalar_first));
  EXPECT_EQ(capabilities_for_carrier_class(cls).size(), expected + 1);
  const OperationPlan int_add = resolve_operation_plan("add", {DType::Int32(), DType::Int32()});
  EXPECT_EQ(unsupported_plan_reason(cls, int_add),
            "CUDA has capabilities for operation 'add' but none matches the plan " + int_add.to_string() + ".");
}

// backend-capability-descriptor: the table in docs/cuda.md is the class's
// sealed set, rendered (regenerate: strideweave caps --render-docs docs/cuda.md).
TEST(CUDA_NoDevice, Issue23_RenderedTableInDocsMatchesTheDescriptors) {
  const std::string doc = read_file(std::string(STRIDEWEAVE_SOURCE_DIR) + "/docs/cuda.md");
  ASSERT_FALSE(doc.empty());
  const std::string begin = "<!-- BEGIN CAPABILITIES: CUDA -->\n", end = "<!-- END CAPABILITIES: CUDA -->";
  const auto b = doc.find(begin);
  ASSERT_NE(b, std::string::npos);
  const auto e = doc.find(end, b);
  ASSERT_NE(e, std::string::npos);
  EXPECT_EQ(doc.substr(b + begin.size(), e - b - begin.size()), render_capability_table(carrier_class<CUDA>()))
      << "docs/cuda.md is out of date: run strideweave caps --render-docs docs/cuda.md";
  EXPECT_EQ(render_capability_tables_into(doc), doc);
}

// ---------------------------------------------------------------- on a device

// carrier-extension R10 with CUDA: a kernel pack naming CUDA and its
// interface attaches; its pattern (preference 10) runs before the built-in
// one (preference 0); the capability set stays the union (the pack adds no
// plan here). Packs attach before the class is first observed, so this
// suite runs in a process of its own (ctest runs each suite alone;
// scripts/device-check runs it first, alone).
TEST(CUDA_DevicePack, Issue23_APackAttachesToCudaAndItsPatternWinsByPreference) {
  if (CUDA::device_count() == 0) GTEST_SKIP() << kNoDevice;
  static std::atomic<int> ran{0};
  const OperationPlan add_plan = resolve_operation_plan("add", {DType::Float32(), DType::Float32()});
  extension::KernelPattern pattern(
      operation::get_definition("add"), {OperationCapability::from_plan(add_plan)}, "test_pack.add",
      [](const operation::ResolvedInvocation& inv,
         const extension::KernelExecutionInterface&) -> extension::KernelPattern::Prepared {
        return extension::PreparedKernel(CUDA::kernel_interface(), [&inv]() -> extension::ResultSubmission {
          ++ran;
          const BuiltinKernelCall call = lower_builtin(inv);
          const std::vector<Value> a = std::get<Tensor>(call.operands[0]).values();
          const std::vector<Value> b = std::get<Tensor>(call.operands[1]).values();
          std::vector<Value> sum;
          for (std::size_t i = 0; i < a.size(); ++i) sum.push_back(Value::from_float32(a[i].f + b[i].f));
          const int device = static_cast<const CUDA&>(*std::get<Tensor>(call.operands[0]).carrier()).device();
          const std::shared_ptr<CUDA> out = CUDA::create(static_cast<std::int64_t>(sum.size()), device);
          out->write_values(0, sum);
          return extension::ProviderResult({Tensor(out, inv.results()[0].shape())});
        });
      },
      /*preference=*/10);
  const std::vector<OperationCapability> before = capabilities_for_carrier_class(carrier_class<CUDA>());
  extension::register_kernel_pack(
      extension::KernelPack("test_pack", "1.0", carrier_class<CUDA>(), CUDA::kernel_interface(), {pattern}));
  EXPECT_EQ(capabilities_for_carrier_class(carrier_class<CUDA>()), before);
  std::vector<Value> xs{Value::from_float32(1.5f), Value::from_float32(-2.0f)};
  const Tensor x = move(Tensor(CPU::from_values(xs, DType::Float32()), Shape::of({2})), CUDA::create(2));
  const Tensor y = add(x, x);
  EXPECT_EQ(ran.load(), 1);
  EXPECT_EQ(y.values(), (std::vector<Value>{Value::from_float32(3.0f), Value::from_float32(-4.0f)}));
  // Other operations keep their built-in patterns.
  EXPECT_EQ(relu(x).values(), (std::vector<Value>{Value::from_float32(1.5f), Value::from_float32(0.0f)}));
  EXPECT_EQ(ran.load(), 1);
}

class CUDA_Device : public ::testing::Test {
 protected:
  void SetUp() override {
    if (CUDA::device_count() == 0) GTEST_SKIP() << kNoDevice;
  }
};

TEST_F(CUDA_Device, Issue23_StorageRoundTripsEveryDtype) {
  for (const SimpleDType* d : {&DType::Float32(), &DType::Int32(), &DType::Bool()}) {
    const std::shared_ptr<CUDA> c = CUDA::create(5, 0, true, *d);
    EXPECT_EQ(c->placement(), Placement::device(0));
    for (std::int64_t i = 0; i < 5; ++i) EXPECT_EQ(c->get_value(i), storage_zero(*d)) << d->name();
    std::vector<Value> v;
    for (int i = 0; i < 5; ++i)
      v.push_back(d == &DType::Float32() ? Value::from_float32(0.5f * i - 1)
                  : d == &DType::Int32() ? Value::from_int32(i * 1000 - 7)
                                         : Value::from_bool(i % 2 == 1));
    c->write_values(0, v);
    EXPECT_EQ(c->read_values(0, 5), v) << d->name();
    c->set_value(3, v[1]);
    EXPECT_EQ(c->get_value(3), v[1]);
  }
}

TEST_F(CUDA_Device, Issue23_MovesBetweenCpuAndCudaKeepValuesAndLayout) {
  const std::vector<float> values{1.5f, -2.0f, 0.0f, 3.25f, 7.0f, -0.5f};
  std::vector<Value> vs;
  for (float f : values) vs.push_back(Value::from_float32(f));
  const Tensor host(CPU::create(6)->new_like(vs), Shape::of({2, 3}));
  const Tensor on_device = move(host, CUDA::create(6));
  EXPECT_EQ(on_device.carrier()->class_name(), "CUDA");
  EXPECT_EQ(on_device.values(), host.values());
  EXPECT_EQ(describe_move_route(*on_device.carrier(), *CPU::create(6)).name, "cuda.download");
  const Tensor back = move(on_device, CPU::create(6));
  EXPECT_EQ(back.values(), host.values());
  EXPECT_EQ(back.layout(), host.layout());
}

// Parity derived from the descriptors: every entry of CUDA's table runs on
// the device over the conformance generators' cases and agrees with Generic
// (values, dtypes, shapes, layouts, errors), and every registry plan outside
// the table is refused by the gate.
TEST_F(CUDA_Device, Issue23_AgreesWithGenericOnEveryCapability) {
  const conformance::ConformanceReport report = conformance::run_conformance(CUDA::create(0));
  for (const std::string& f : report.failures) ADD_FAILURE() << f;
  EXPECT_EQ(report.failed, 0u);
  EXPECT_EQ(report.entries, capabilities_for_carrier_class(carrier_class<CUDA>()).size());
  EXPECT_GT(report.cases, 0u);
}

// Autograd belongs to the definition: a differentiable chain on CUDA
// tensors has Generic's gradients.
TEST_F(CUDA_Device, Issue23_GradientsOfAChainMatchGeneric) {
  std::vector<Value> xs, ws;
  for (int i = 0; i < 8; ++i) {
    xs.push_back(Value::from_float32(0.25f * i - 1.0f));
    ws.push_back(Value::from_float32(1.5f - 0.125f * i));
  }
  const auto run = [&](const std::shared_ptr<Carrier>& proto) {
    Tensor x(proto->new_like(xs), Shape::of({8})), w(proto->new_like(ws), Shape::of({8}));
    Tensor y = tanh(add(elementwise_mul(x, w), sigmoid(x)));
    Tensor loss = move(y, CPU::create(8));
    std::vector<Value> seed(8, Value::from_float32(1.0f));
    loss.backward(Tensor(CPU::create(8)->new_like(seed), Shape::of({8})));
    return std::make_pair(x.grad()->values(), w.grad()->values());
  };
  const auto [gx, gw] = run(CUDA::create(0));
  const auto [rx, rw] = run(Generic::create({}, DType::Float32()));
  ASSERT_EQ(gx.size(), rx.size());
  for (std::size_t i = 0; i < gx.size(); ++i) {
    EXPECT_NEAR(gx[i].f, rx[i].f, 1e-5f * (1 + std::abs(rx[i].f))) << i;
    EXPECT_NEAR(gw[i].f, rw[i].f, 1e-5f * (1 + std::abs(rw[i].f))) << i;
  }
}

TEST_F(CUDA_Device, Issue23_OperandsOnTwoDevicesAreTypeErrorBeforeAnyWork) {
  if (CUDA::device_count() < 2) GTEST_SKIP() << "needs two CUDA devices";
  const Tensor a(CUDA::create(4, 0), Shape::of({4})), b(CUDA::create(4, 1), Shape::of({4}));
  EXPECT_THROW(add(a, b), TypeError);
}

}  // namespace
