// Issue 20 step 3, placement (docs/design.md, "Placement"): every carrier
// instance has a placement; the operands of one call, and a caller-provided
// output, share exact class AND placement, else a TypeError naming both
// placements, before any work (no provider is asked); capabilities stay per
// class (backend-capabilities.md); explain() reports the placement.
#include <strideweave/strideweave.h>

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <unordered_set>
#include <vector>

#include "support/expect_exactly.h"

namespace {

using namespace strideweave;
namespace ext = strideweave::extension;
namespace op = strideweave::operation;

// A definition-backed device carrier: host-arena storage, but it reports
// the device index it was placed on.
class PlacedAccel final : public ext::DefinedCarrier {
 public:
  explicit PlacedAccel(ext::Construction key) : DefinedCarrier(std::move(key)) {}
  Placement placement() const override { return Placement::device(device); }
  std::vector<Value> arena;
  std::int64_t device = 0;
};

class Iface final : public ext::KernelExecutionInterface {
 public:
  using KernelExecutionInterface::KernelExecutionInterface;
};

std::atomic<int>& prepares() {
  static std::atomic<int> n{0};
  return n;
}

// Registered once: one kernel pattern for add on Float32 that adds the
// arenas and places the result where the first operand is.
void register_placed_accel() {
  static const bool once = [] {
    const PlanOperand f(DType::Float32());
    ext::StorageProvider storage(
        [](const Carrier&, const DType& d) { return &d == &DType::Float32(); },
        [](const Carrier& c) { return static_cast<std::int64_t>(static_cast<const PlacedAccel&>(c).arena.size()); },
        [](Carrier& c, std::int64_t n) { static_cast<PlacedAccel&>(c).arena.assign(static_cast<std::size_t>(n), Value::from_float32(0)); },
        [](Carrier& c) { static_cast<PlacedAccel&>(c).arena.clear(); },
        [](const Carrier& c, std::int64_t i) { return static_cast<const PlacedAccel&>(c).arena[static_cast<std::size_t>(i)]; },
        [](Carrier& c, std::int64_t i, const Value& v) { static_cast<PlacedAccel&>(c).arena[static_cast<std::size_t>(i)] = v; });
    std::vector<ext::KernelPattern> patterns;
    patterns.emplace_back(
        op::get_definition("add"), std::vector{OperationCapability::from_plan(resolve_operation_plan("add", {f, f}))},
        "placed_add",
        [](const op::ResolvedInvocation& inv, const ext::KernelExecutionInterface& i) -> ext::KernelPattern::Prepared {
          ++prepares();
          auto self = std::shared_ptr<const ext::KernelExecutionInterface>(std::shared_ptr<void>(), &i);
          return ext::PreparedKernel(self, [inv = &inv]() -> ext::ResultSubmission {
            const Tensor& a = std::get<Tensor>(inv->operands()[0]);
            const Tensor& b = std::get<Tensor>(inv->operands()[1]);
            const op::ResultSpec& spec = inv->results()[0];
            auto c = ext::create<PlacedAccel>(spec.shape().size(), spec.dtype());
            c->device = static_cast<const PlacedAccel&>(*a.carrier()).device;
            for (std::int64_t k = 0; k < spec.shape().size(); ++k)
              c->arena[static_cast<std::size_t>(k)] =
                  Value::from_float32(a.carrier()->get_value(a.offset() + a.layout()(k)).f +
                                      b.carrier()->get_value(b.offset() + b.layout()(k)).f);
            return ext::ProviderResult(std::vector<Tensor>{Tensor(c, 0, spec.layout())});
          });
        });
    ext::register_carrier_definition(
        carrier_class<PlacedAccel>(),
        ext::CarrierDefinition(storage, ext::KernelProvider(std::make_shared<Iface>("1"), patterns)));
    return true;
  }();
  (void)once;
}

Tensor on_device(std::int64_t device, std::vector<float> values) {
  register_placed_accel();
  auto c = ext::create<PlacedAccel>(static_cast<std::int64_t>(values.size()), DType::Float32());
  c->device = device;
  for (std::size_t i = 0; i < values.size(); ++i) c->arena[i] = Value::from_float32(values[i]);
  return Tensor(c, 0, Layout::compact(Shape{static_cast<std::int64_t>(values.size())}));
}

TEST(Placement_Issue20Step3, PlacementsAreValues) {
  EXPECT_EQ(Placement::host(), Placement::host());
  EXPECT_NE(Placement::host(), Placement::device(0));
  EXPECT_NE(Placement::device(0), Placement::device(1));
  EXPECT_NE(Placement::device(1), Placement::device(1).on_rank(0));
  EXPECT_EQ(Placement::device(1).on_rank(3).rank(), 3);
  EXPECT_EQ(Placement::host().rank(), -1);
  EXPECT_EQ(Placement::device(1).on_rank(3).to_string(), "rank 3 device 1");
  EXPECT_EQ(Placement::host().to_string(), "host");
  const std::unordered_set<Placement> set{Placement::host(), Placement::device(0), Placement::device(0),
                                          Placement::host().on_rank(1)};
  EXPECT_EQ(set.size(), 3u);
  EXPECT_THROW_EXACTLY((void)Placement::device(-1), ValueError);
  EXPECT_THROW_EXACTLY((void)Placement::host().on_rank(-1), ValueError);
}

TEST(Placement_Issue20Step3, ShippedCarriersLiveOnTheHost) {
  EXPECT_EQ(make_tensor<CPU>({1.0f}, Shape{1}).carrier()->placement(), Placement::host());
  EXPECT_EQ(make_tensor<Generic>({1.0f}, Shape{1}).carrier()->placement(), Placement::host());
}

TEST(Placement_Issue20Step3, OperandsOnTwoPlacementsAreATypeErrorBeforeAnyWork) {
  const Tensor a = on_device(0, {1, 2});
  const Tensor b = on_device(1, {3, 4});
  const int before = prepares().load();
  const auto names_both = [](const TypeError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("device 0"), std::string::npos) << m;
    EXPECT_NE(m.find("device 1"), std::string::npos) << m;
  };
  try {
    (void)add(a, b);
    ADD_FAILURE() << "typed add across placements";
  } catch (const TypeError& e) {
    names_both(e);
  }
  try {
    (void)(*op::get_definition("add"))({a, b});
    ADD_FAILURE() << "add by definition across placements";
  } catch (const TypeError& e) {
    names_both(e);
  }
  EXPECT_EQ(prepares().load(), before) << "a provider was asked before the placement check";
  // One placement: the call runs, and its result stays there.
  const Tensor c = add(a, on_device(0, {10, 20}));
  EXPECT_EQ(c.carrier()->placement(), Placement::device(0));
  EXPECT_EQ(c.values()[1], Value::from_float32(22));
  // Capabilities stay per class: one sealed set for both devices.
  EXPECT_EQ(a.carrier()->operation_capabilities(), b.carrier()->operation_capabilities());
}

TEST(Placement_Issue20Step3, ACallerOutputOnAnotherPlacementIsATypeError) {
  const Tensor a = on_device(0, {1, 2});
  const Tensor b = on_device(0, {3, 4});
  const Tensor elsewhere = on_device(1, {0, 0});
  const std::uint64_t version = elsewhere.carrier()->version();
  EXPECT_THROW_EXACTLY((void)add(a, b, into(elsewhere)), TypeError);
  EXPECT_EQ(elsewhere.carrier()->version(), version);
  EXPECT_EQ(elsewhere.values()[0], Value::from_float32(0));
}

TEST(Placement_Issue20Step3, ExplainReportsThePlacement) {
  const Tensor a = on_device(1, {1, 2});
  const Explanation e = explain(*op::get_definition("add"), {a, a});
  ASSERT_TRUE(e.placement);
  EXPECT_EQ(*e.placement, Placement::device(1));
  EXPECT_NE(to_text(e).find("placement:  device 1"), std::string::npos) << to_text(e);
}

}  // namespace
