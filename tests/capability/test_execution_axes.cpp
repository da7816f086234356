// backend-capability-descriptor.md: the execution-axis descriptor of every
// capability entry (owned_result, borrowed_input, caller_output,
// strided_output, accumulation), the descriptor queries by (operation,
// representative input dtype), the structured UnsupportedOpDType, and a proof
// of every level Generic and CPU claim, derived from their kernel tables.
// Custom classes use indices 200 .. 299 (capability_test_support.h).
#include <gtest/gtest.h>

#include "support/shipped_types.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "capability/capability_test_support.h"
#include "carriers/kernel_axes.h"
#include "execution/kernel_table.h"
#include "support/expect_exactly.h"

namespace sw_caps {
namespace {

// ---------------------------------------------------------------- helpers

using Maker = std::function<std::shared_ptr<Carrier>(const SimpleDType&, const std::vector<Value>&)>;

Maker maker_for(CarrierClass cls) {
  if (cls == carrier_class<Generic>())
    return [](const SimpleDType& d, const std::vector<Value>& v) -> std::shared_ptr<Carrier> { return Generic::create(v, d); };
  return [](const SimpleDType& d, const std::vector<Value>& v) -> std::shared_ptr<Carrier> { return CPU::from_values(v, d); };
}

std::vector<std::int64_t> compact_strides(const std::vector<std::int64_t>& extents) {
  std::vector<std::int64_t> s;
  std::int64_t run = 1;
  for (std::int64_t e : extents) {
    s.push_back(run);
    if (e != 0) run *= e;
  }
  return s;
}

std::vector<std::int64_t> extents_of(const Shape& shape) { return {shape.extents().begin(), shape.extents().end()}; }

// A deterministic value of `d` for position k of operand `salt`.
Value value_at(const SimpleDType& d, std::int64_t k, int salt) {
  if (&d == &DType::Float32()) return Value::from_float32(static_cast<float>((k * 7 + salt * 3) % 11 - 5) * 0.75f + 0.125f);
  if (&d == &DType::Int32()) return Value::from_int32(static_cast<std::int32_t>((k * 5 + salt) % 9 - 4));
  return Value::from_bool((k + salt) % 3 == 0);
}

// A filler that no kernel produces from the operands above.
Value sentinel(const SimpleDType& d, std::int64_t k) {
  if (&d == &DType::Float32()) return Value::from_float32(-999.5f - static_cast<float>(k));
  if (&d == &DType::Int32()) return Value::from_int32(static_cast<std::int32_t>(-777000 - k));
  return Value::from_bool(k % 2 == 0);
}

// A compact tensor of `extents` holding `values` in logical order.
Tensor compact(const Maker& make, const SimpleDType& d, const std::vector<std::int64_t>& extents,
               const std::vector<Value>& values) {
  return Tensor(make(d, values), 0, Layout::compact(Shape::of(extents)));
}

// A strided view (offset 1, every other slot of a larger storage filled with
// sentinels) holding `values` in logical order.
Tensor strided(const Maker& make, const SimpleDType& d, const std::vector<std::int64_t>& extents,
               const std::vector<Value>& values) {
  std::vector<Value> storage;
  const std::int64_t n = static_cast<std::int64_t>(values.size());
  for (std::int64_t i = 0; i < 2 * n + 1; ++i) storage.push_back(sentinel(d, i));
  for (std::int64_t k = 0; k < n; ++k) storage[static_cast<std::size_t>(1 + 2 * k)] = values[static_cast<std::size_t>(k)];
  std::vector<std::int64_t> strides = compact_strides(extents);
  for (std::int64_t& s : strides) s *= 2;
  return Tensor(make(d, storage), 1, Layout(Shape::of(extents), Stride::of(strides)));
}

std::vector<Value> filled(const SimpleDType& d, std::int64_t n, int salt) {
  std::vector<Value> v;
  for (std::int64_t k = 0; k < n; ++k) v.push_back(value_at(d, k, salt));
  return v;
}

std::int64_t product(const std::vector<std::int64_t>& e) {
  std::int64_t n = 1;
  for (std::int64_t x : e) n *= x;
  return n;
}

bool same_bits_or_both_nan(const Value& a, const Value& b) {
  if (a.kind == ElementKind::Float32 && b.kind == ElementKind::Float32 && std::isnan(a.f) && std::isnan(b.f)) return true;
  return a == b;
}

// One call of a plan: operand descriptions (so they can be rebuilt as views
// on either carrier), options, accumulator.
struct OperandSpec {
  bool tensor = true;
  const SimpleDType* dtype = nullptr;
  std::vector<std::int64_t> extents;
  std::vector<Value> values;
  WeakScalar scalar = WeakScalar(0);
};
struct Recipe {
  std::vector<OperandSpec> operands;
  CallOptions options;
  ExecutionRequest execution;
};

enum class View { Compact, Strided };

std::vector<CallOperand> build(const Recipe& r, const Maker& make, View view) {
  std::vector<CallOperand> out;
  for (const OperandSpec& o : r.operands) {
    if (!o.tensor) out.emplace_back(o.scalar);
    else if (view == View::Compact) out.emplace_back(compact(make, *o.dtype, o.extents, o.values));
    else out.emplace_back(strided(make, *o.dtype, o.extents, o.values));
  }
  return out;
}

CallResult call(const OperationPlan& plan, const Recipe& r, const std::vector<CallOperand>& operands,
                const Output& out = {}) {
  ExecutionRequest execution = r.execution;
  execution.out = out;
  return call_operation(plan.operation(), operands, r.options, execution);
}

// The weak scalars (one per weak operand, jointly) that resolve `plan`.
std::optional<std::vector<WeakScalar>> selecting_scalars(const OperationPlan& plan) {
  const std::vector<WeakScalar> candidates{WeakScalar(3), WeakScalar(-1), WeakScalar(0.5), WeakScalar(2),
                                           WeakScalar(true), WeakScalar(0)};
  std::vector<std::size_t> weak;
  for (std::size_t i = 0; i < plan.operands().size(); ++i)
    if (plan.operands()[i].role() == OperandRole::WEAK_SCALAR) weak.push_back(i);
  std::vector<std::size_t> pick(weak.size(), 0);
  while (true) {
    std::vector<PlanOperand> ops;
    std::vector<WeakScalar> chosen;
    std::size_t w = 0;
    for (std::size_t i = 0; i < plan.operands().size(); ++i) {
      if (plan.operands()[i].role() == OperandRole::TENSOR) {
        ops.emplace_back(*plan.operands()[i].dtype());
      } else {
        chosen.push_back(candidates[pick[w++]]);
        ops.emplace_back(chosen.back());
      }
    }
    try {
      if (resolve_for_request(plan.operation(), ops, execution_request_of(plan)) == plan) return chosen;
    } catch (const Error&) {
    }
    std::size_t k = 0;
    while (k < pick.size() && ++pick[k] == candidates.size()) pick[k++] = 0;
    if (k == pick.size()) return std::nullopt;
  }
}

// The operand recipe of `plan`: shapes and options by operation family,
// values deterministic and small (no Int32 overflow in the owned result).
std::optional<Recipe> recipe_for(const OperationPlan& plan) {
  Recipe r;
  r.execution = execution_request_of(plan);
  const std::string& op = plan.operation();
  std::vector<std::vector<std::int64_t>> shapes;
  const std::size_t n_ops = plan.operands().size();
  if (op == "matmul") {
    shapes = {{3, 4}, {4, 2}};
  } else if (op == "conv_general") {
    shapes = {{1, 2, 5}, {2, 2, 3}};
  } else if (op == "gather") {
    shapes = {{4, 3}, {2, 3}};
    r.options["axis"] = std::int64_t{0};
  } else if (op == "scatter" || op == "scatter_add") {
    shapes = {{4, 3}, {2, 3}, {2, 3}};
    r.options["axis"] = std::int64_t{0};
  } else {
    shapes.assign(n_ops, {4, 3});
    if (op == "cumsum" || op == "argmax" || op == "argmin") r.options["axis"] = std::int64_t{0};
    if (op.rfind("reduce_", 0) == 0) r.options["axes"] = std::vector<std::int64_t>{0};
    if (op.rfind("_topk_", 0) == 0) r.options["k"] = std::int64_t{2};
  }
  if (shapes.size() != n_ops) return std::nullopt;
  const std::optional<std::vector<WeakScalar>> scalars = selecting_scalars(plan);
  if (!scalars) return std::nullopt;
  std::size_t w = 0;
  for (std::size_t i = 0; i < n_ops; ++i) {
    const OperandPlan& o = plan.operands()[i];
    OperandSpec s;
    if (o.role() == OperandRole::WEAK_SCALAR) {
      s.tensor = false;
      s.scalar = (*scalars)[w++];
    } else {
      s.dtype = o.dtype();
      s.extents = shapes[i];
      s.values = filled(*o.dtype(), product(shapes[i]), static_cast<int>(i));
      if ((op == "gather" || op == "scatter" || op == "scatter_add") && i == 1) {
        // In-range, distinct per column: element (r, c) = (r + c) % 4.
        s.values.clear();
        for (std::int64_t c = 0; c < 3; ++c)
          for (std::int64_t rr = 0; rr < 2; ++rr) s.values.push_back(Value());
        for (std::int64_t c = 0; c < 3; ++c)
          for (std::int64_t rr = 0; rr < 2; ++rr)
            s.values[static_cast<std::size_t>(rr + 2 * c)] = Value::from_int32(static_cast<std::int32_t>((rr + c) % 4));
      }
    }
    r.operands.push_back(std::move(s));
  }
  return r;
}

// Checks `out` against `expected` (logical order) and the storage outside the
// view against `before`.
void expect_view_holds(const Tensor& out, const std::vector<Value>& expected, const std::vector<Value>& before,
                       const std::string& what) {
  const std::vector<Value> got = out.values();
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (std::size_t k = 0; k < got.size(); ++k)
    EXPECT_TRUE(got[k] == expected[k]) << what << " element " << k << ": " << got[k].to_string() << " vs "
                                       << expected[k].to_string();
  std::set<std::int64_t> inside;
  for (std::int64_t k = 0; k < out.size(); ++k) inside.insert(out.offset() + out.layout()(k));
  for (std::int64_t i = 0; i < out.carrier()->size(); ++i)
    if (!inside.count(i)) {
      EXPECT_TRUE(out.carrier()->get_value(i) == before[static_cast<std::size_t>(i)]) << what << " slot " << i
                                                                                       << " outside the view changed";
    }
}

std::vector<Value> storage_of(const Carrier& c) {
  std::vector<Value> v;
  for (std::int64_t i = 0; i < c.size(); ++i) v.push_back(c.get_value(i));
  return v;
}

void expect_unsupported_axis(const std::function<void()>& f, const std::string& backend, const OperationPlan& plan,
                             ExecutionAxis axis, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": an Unsupported " << name_of(axis) << " axis was accepted";
  } catch (const UnsupportedOpDType& e) {
    EXPECT_ERROR_TYPE_IS(e, UnsupportedOpDType);
    EXPECT_EQ(e.backend(), backend) << what;
    EXPECT_EQ(e.operation(), plan.operation()) << what;
    EXPECT_EQ(e.axis(), std::optional<ExecutionAxis>(axis)) << what;
    ASSERT_TRUE(e.plan().has_value()) << what;
    EXPECT_EQ(*e.plan(), plan) << what;
  }
}

// Proves every level that the capability entries of `cls` claim.
void prove_every_claim(CarrierClass cls, const std::string& backend) {
  const Maker make = maker_for(cls);
  const std::vector<OperationCapability> caps = capabilities_for_carrier_class(cls);
  ASSERT_FALSE(caps.empty());
  std::size_t proven = 0;
  std::vector<std::string> without_recipe;
  for (const OperationCapability& cap : caps) {
    const OperationPlan plan = cap.to_plan();
    const std::string what = backend + " " + plan.to_string();
    SCOPED_TRACE(what);
    // An operation family added later without a recipe here (one whose
    // operands the default elementwise recipe cannot call) is reported below
    // instead of passing silently.
    std::optional<Recipe> recipe = recipe_for(plan);
    if (recipe) {
      try {
        const CallResult probe = call(plan, *recipe, build(*recipe, make, View::Compact));
        if (!(probe.plans.front() == plan) || probe.results.size() != 1) recipe.reset();
      } catch (const Error&) {
        recipe.reset();
      }
    }
    if (!recipe) {
      without_recipe.push_back(plan.to_string());
      continue;
    }
    const ExecutionAxes axes = execution_axes(cls, cap);
    const SimpleDType& out_dtype = plan.output();

    // owned_result: a fresh compact result of this class, as the plan says.
    ASSERT_NE(axes.owned_result, SupportLevel::Unsupported);
    const std::vector<CallOperand> operands = build(*recipe, make, View::Compact);
    const CallResult owned_call = call(plan, *recipe, operands);
    ASSERT_EQ(owned_call.plans.front(), plan);
    ASSERT_EQ(owned_call.results.size(), 1u);
    const Tensor owned = owned_call.results.front();
    EXPECT_EQ(owned.carrier_type(), cls);
    EXPECT_EQ(&owned.dtype(), &out_dtype);
    EXPECT_TRUE(owned.layout().is_compact());
    EXPECT_EQ(owned.offset(), 0);
    for (const CallOperand& o : operands)
      if (const Tensor* t = std::get_if<Tensor>(&o)) {
        EXPECT_NE(t->carrier(), owned.carrier());
      }
    const std::vector<Value> result = owned.values();
    const std::vector<std::int64_t> shape = extents_of(owned.shape());
    const std::int64_t n = owned.size();

    // borrowed_input: the same operands read in place as strided views give
    // the same result.
    if (axes.borrowed_input != SupportLevel::Unsupported) {
      const CallResult viewed = call(plan, *recipe, build(*recipe, make, View::Strided));
      const std::vector<Value> got = viewed.results.front().values();
      ASSERT_EQ(got.size(), result.size());
      for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_TRUE(got[k] == result[k]) << "borrowed input element " << k << ": " << got[k].to_string() << " vs "
                                         << result[k].to_string();
    }

    auto run_into = [&](const Tensor& out, OutputMode mode) {
      return call(plan, *recipe, operands, Output(out, mode)).results.front();
    };

    // caller_output: compact output of the plan's dtype and the result shape.
    {
      std::vector<Value> init;
      for (std::int64_t k = 0; k < n; ++k) init.push_back(sentinel(out_dtype, k));
      const Tensor out = compact(make, out_dtype, shape, init);
      const std::uint64_t v0 = out.carrier()->version();
      if (axes.caller_output == SupportLevel::Unsupported) {
        expect_unsupported_axis([&] { run_into(out, OutputMode::Overwrite); }, backend, plan, ExecutionAxis::caller_output,
                                what);
        EXPECT_EQ(out.carrier()->version(), v0);
        EXPECT_EQ(out.values(), init);
      } else {
        const Tensor returned = run_into(out, OutputMode::Overwrite);
        EXPECT_TRUE(returned.is(out));
        expect_view_holds(out, result, init, "caller_output");
        EXPECT_EQ(out.carrier()->version(), v0 + 1);
      }
    }

    // strided_output: a view of every other slot (offset 1) of a larger
    // carrier; slots outside the view stay untouched.
    {
      const Tensor out = strided(make, out_dtype, shape, std::vector<Value>(static_cast<std::size_t>(n), sentinel(out_dtype, 3)));
      const std::vector<Value> before = storage_of(*out.carrier());
      const std::uint64_t v0 = out.carrier()->version();
      if (axes.caller_output == SupportLevel::Unsupported || axes.strided_output == SupportLevel::Unsupported) {
        expect_unsupported_axis([&] { run_into(out, OutputMode::Overwrite); }, backend, plan,
                                axes.caller_output == SupportLevel::Unsupported ? ExecutionAxis::caller_output
                                                                                : ExecutionAxis::strided_output,
                                what);
        EXPECT_EQ(storage_of(*out.carrier()), before);
        EXPECT_EQ(out.carrier()->version(), v0);
      } else {
        run_into(out, OutputMode::Overwrite);
        expect_view_holds(out, result, before, "strided_output");
        EXPECT_EQ(out.carrier()->version(), v0 + 1);
      }
    }

    // accumulation: out == old + result in the output arithmetic (binary32
    // add for Float32, checked exact add for Int32), compact and strided.
    for (View view : {View::Compact, View::Strided}) {
      std::vector<Value> old;
      for (std::int64_t k = 0; k < n; ++k) old.push_back(value_at(out_dtype, k, 5));
      const Tensor out = view == View::Compact ? compact(make, out_dtype, shape, old) : strided(make, out_dtype, shape, old);
      const std::vector<Value> before = storage_of(*out.carrier());
      const std::uint64_t v0 = out.carrier()->version();
      const bool strided_unsupported = view == View::Strided && axes.strided_output == SupportLevel::Unsupported;
      if (axes.accumulation == SupportLevel::Unsupported || strided_unsupported) {
        expect_unsupported_axis([&] { run_into(out, OutputMode::Accumulate); }, backend, plan,
                                axes.accumulation == SupportLevel::Unsupported ? ExecutionAxis::accumulation
                                                                               : ExecutionAxis::strided_output,
                                what);
        EXPECT_EQ(storage_of(*out.carrier()), before);
        EXPECT_EQ(out.carrier()->version(), v0);
        continue;
      }
      std::vector<Value> expected;
      bool overflows = false;
      for (std::int64_t k = 0; k < n; ++k) {
        const Value& a = old[static_cast<std::size_t>(k)];
        const Value& b = result[static_cast<std::size_t>(k)];
        if (a.kind == ElementKind::Int32) {
          const std::int64_t s = std::int64_t{a.i} + b.i;
          overflows = overflows || s < INT32_MIN_VALUE || s > INT32_MAX_VALUE;
          expected.push_back(Value::from_int32(static_cast<std::int32_t>(s)));
        } else {
          ASSERT_EQ(a.kind, ElementKind::Float32) << "accumulation claimed for a Bool result";
          expected.push_back(Value::from_float32(a.f + b.f));
        }
      }
      if (overflows) {
        EXPECT_THROW_EXACTLY(run_into(out, OutputMode::Accumulate), OverflowError);
        EXPECT_EQ(storage_of(*out.carrier()), before);
        EXPECT_EQ(out.carrier()->version(), v0);
        continue;
      }
      run_into(out, OutputMode::Accumulate);
      const std::vector<Value> got = out.values();
      ASSERT_EQ(got.size(), expected.size());
      for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_TRUE(same_bits_or_both_nan(got[k], expected[k]))
            << "accumulation element " << k << ": " << got[k].to_string() << " vs " << expected[k].to_string();
      EXPECT_EQ(out.carrier()->version(), v0 + 1);
    }
    ++proven;
  }
  EXPECT_TRUE(without_recipe.empty()) << "entries without an operand recipe: " << ::testing::PrintToString(without_recipe);
  EXPECT_EQ(proven + without_recipe.size(), caps.size());
  EXPECT_GT(proven, 50u);
}

// ---------------------------------------------------------------- the claims

TEST(ExecutionAxes_ProveEveryClaimedLevel, Generic) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  prove_every_claim(carrier_class<Generic>(), "Generic");
}

TEST(ExecutionAxes_ProveEveryClaimedLevel, CPU) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  prove_every_claim(carrier_class<CPU>(), "CPU");
}

TEST(ExecutionAxes_ShippedClaims, EntriesCarryTheAxesTheirKernelsRegistered) {
  for (CarrierClass cls : {carrier_class<Generic>(), carrier_class<CPU>()}) {
    const KernelTable& table = *kernel_table(cls);
    for (const OperationPlan& p : table.plans()) {
      const ExecutionAxes a = execution_axes(cls, require_capability(cls, p));
      EXPECT_EQ(a, table.axes(p)) << p.to_string();
      // kernel_axes.h: what every Generic and CPU kernel claims.
      const SupportLevel borrowed = cls == carrier_class<CPU>() ? SupportLevel::FallbackCopy : SupportLevel::Native;
      // CPU's elementwise arithmetic family read-modify-writes its output
      // (KernelCall::accumulate, issue 20): Native accumulation; everything
      // else accumulates through the framework's copy.
      static const std::set<std::string> elementwise = {"add",     "sub",     "mul",   "elementwise_mul",
                                                        "div",     "pow",     "rem",   "maximum",
                                                        "minimum", "clamp",   "select"};
      const bool native_accumulation = cls == carrier_class<CPU>() && elementwise.count(p.operation()) != 0;
      EXPECT_EQ(a, carriers::direct_write_axes(p, borrowed, native_accumulation)) << p.to_string();
      EXPECT_EQ(a.owned_result, SupportLevel::Native);
      EXPECT_EQ(a.borrowed_input, borrowed);
      EXPECT_EQ(a.caller_output,
                carriers::kernel_may_fail(p) ? SupportLevel::FallbackCopy : SupportLevel::Native) << p.to_string();
      EXPECT_EQ(a.strided_output, a.caller_output);
      EXPECT_EQ(a.accumulation, &p.output() == &DType::Bool() ? SupportLevel::Unsupported
                                : native_accumulation          ? SupportLevel::Native
                                                               : SupportLevel::FallbackCopy)
          << p.to_string();
    }
  }
}

TEST(ExecutionAxes_Records, AxesAndNames) {
  ExecutionAxes a;
  EXPECT_EQ(a.owned_result, SupportLevel::Native);
  EXPECT_EQ(a.borrowed_input, SupportLevel::Native);
  EXPECT_EQ(a.caller_output, SupportLevel::Unsupported);
  EXPECT_EQ(a.strided_output, SupportLevel::Unsupported);
  EXPECT_EQ(a.accumulation, SupportLevel::Unsupported);
  a.strided_output = SupportLevel::FallbackCopy;
  EXPECT_EQ(a.level(ExecutionAxis::strided_output), SupportLevel::FallbackCopy);
  EXPECT_EQ(a.level(ExecutionAxis::owned_result), SupportLevel::Native);
  EXPECT_EQ(all_execution_axes().size(), 5u);
  EXPECT_STREQ(name_of(ExecutionAxis::caller_output), "caller_output");
  EXPECT_STREQ(name_of(ExecutionAxis::accumulation), "accumulation");
  EXPECT_STREQ(name_of(SupportLevel::FallbackCopy), "FallbackCopy");
  EXPECT_STREQ(name_of(SupportLevel::Unsupported), "Unsupported");
  EXPECT_STREQ(name_of(SupportLevel::Native), "Native");
}

TEST(ExecutionAxes_Rendering, TableIsRenderedFromTheDescriptor) {
  for (const auto& [cls, name] : {std::pair{carrier_class<Generic>(), std::string("Generic")},
                                  std::pair{carrier_class<CPU>(), std::string("CPU")}}) {
    const std::string table = render_capability_table(cls);
    const std::vector<OperationCapability> caps = capabilities_for_carrier_class(cls);
    EXPECT_EQ(static_cast<std::size_t>(std::count(table.begin(), table.end(), '\n')), caps.size() + 2) << name;
    // One row per entry, in the deterministic order, with its five levels.
    std::size_t pos = table.find('\n', table.find('\n') + 1) + 1;
    for (const OperationCapability& c : caps) {
      const std::size_t end = table.find('\n', pos);
      const std::string row = table.substr(pos, end - pos);
      EXPECT_EQ(row.rfind("| " + c.operation() + " |", 0), 0u) << row;
      const ExecutionAxes a = execution_axes(cls, c);
      EXPECT_NE(row.find(fmt::format("| {} | {} | {} | {} | {} |", name_of(a.owned_result), name_of(a.borrowed_input),
                                     name_of(a.caller_output), name_of(a.strided_output), name_of(a.accumulation))),
                std::string::npos)
          << row;
      pos = end + 1;
    }
    const std::string doc = "intro\n<!-- BEGIN CAPABILITIES: " + name + " -->\nstale\n<!-- END CAPABILITIES: " + name +
                            " -->\nrest\n<!-- BEGIN CAPABILITIES: Nobody -->\nkept\n<!-- END CAPABILITIES: Nobody -->\n";
    EXPECT_EQ(render_capability_tables_into(doc),
              "intro\n<!-- BEGIN CAPABILITIES: " + name + " -->\n" + table + "<!-- END CAPABILITIES: " + name +
                  " -->\nrest\n<!-- BEGIN CAPABILITIES: Nobody -->\nkept\n<!-- END CAPABILITIES: Nobody -->\n");
  }
}

// ---------------------------------------------------------------- descriptor queries

TEST(ExecutionAxes_DescriptorQueries, CapabilityByRepresentativeInputDtype) {
  const CarrierClass cpu = carrier_class<CPU>();
  EXPECT_EQ(capability(cpu, "add", DType::Int32())->to_plan(), i32_add_plan());
  EXPECT_EQ(capability(cpu, "add", DType::Float32())->to_plan(), f32_add_plan());
  // The default accumulator is preferred.
  EXPECT_EQ(capability(cpu, "matmul", DType::Float32())->to_plan(),
            resolve_operation_plan("matmul", {DType::Float32(), DType::Float32()}));
  EXPECT_EQ(capability(cpu, "matmul", DType::Float32())->accumulator_dtype(), &DType::Float32());
  EXPECT_EQ(capability(cpu, "reduce_sum", DType::Int32())->to_plan(), resolve_operation_plan("reduce_sum", {DType::Int32()}));
  EXPECT_EQ(capability(cpu, "select", DType::Bool())->to_plan(),
            resolve_operation_plan("select", {DType::Bool(), DType::Float32(), DType::Float32()}));
  EXPECT_EQ(capability(cpu, "eq", DType::Int32()), std::nullopt);
  EXPECT_EQ(capability(cpu, "caps_test_unknown", DType::Float32()), std::nullopt);
  // Every entry's (operation, first tensor dtype) has a representative that
  // is one of the class's own entries for that key.
  for (CarrierClass cls : {carrier_class<Generic>(), cpu}) {
    const std::vector<OperationCapability> all = capabilities_for_carrier_class(cls);
    for (const OperationCapability& c : all) {
      const SimpleDType* first = nullptr;
      for (const OperandCapability& o : c.operands())
        if (o.role() == OperandRole::TENSOR && !first) first = o.dtype();
      ASSERT_NE(first, nullptr);
      const std::optional<OperationCapability> rep = capability(cls, c.operation(), *first);
      ASSERT_TRUE(rep.has_value()) << c.to_plan().to_string();
      EXPECT_EQ(rep->operation(), c.operation());
      EXPECT_TRUE(std::find(all.begin(), all.end(), *rep) != all.end());
      EXPECT_EQ(require_capability(cls, c.operation(), *first), *rep);
    }
  }
}

// docs/capabilities.md "Representative dtype" (issue 10 item 2): the entry
// for (operation, dtype) is exactly the class's entry for the plan the
// central policy resolves for that key. capability(CPU, "mul", Int32) used to
// answer mul(tensor:int32->float32, weak_scalar->float32), the first entry
// whose first operand was Int32.
TEST(ExecutionAxes_DescriptorQueries, RepresentativeEntryIsThePolicysHomogeneousPlan) {
  EXPECT_EQ(capability(carrier_class<CPU>(), "mul", DType::Int32())->to_plan(),
            resolve_operation_plan("mul", {DType::Int32(), DType::Int32()}));
  EXPECT_EQ(capability(carrier_class<CPU>(), "mul", DType::Int32())->output(), DType::Int32());
  EXPECT_EQ(capability(carrier_class<CPU>(), "pow", DType::Int32())->to_plan(),
            resolve_operation_plan("pow", {DType::Int32(), DType::Int32()}));
  EXPECT_EQ(capability(carrier_class<CPU>(), "gather", DType::Float32())->to_plan(),
            resolve_operation_plan("gather", {DType::Float32(), DType::Int32()}));
  EXPECT_EQ(capability(carrier_class<CPU>(), "exp", DType::Int32())->output(), DType::Float32());

  // Every (operation, dtype) pair against the policy, computed here from the
  // specification's overloads rather than from the table.
  const std::vector<const SimpleDType*> dtypes{&DType::Float32(), &DType::Int32(), &DType::Bool()};
  for (const OperationSpec& spec : registered_operations()) {
    const OperationOverload* widest = nullptr;
    auto tensors = [](const OperationOverload& o) { return std::count(o.roles().begin(), o.roles().end(), OperandRole::TENSOR); };
    int ties = 0;
    for (const OperationOverload& o : spec.overloads()) {
      if (!widest || tensors(o) > tensors(*widest)) {
        widest = &o;
        ties = 1;
      } else if (tensors(o) == tensors(*widest)) {
        ++ties;
      }
    }
    ASSERT_EQ(ties, 1) << spec.name() << ": two overloads tie for the most tensor operands";
    for (const SimpleDType* d : dtypes) {
      std::vector<PlanOperand> operands;
      bool placed = false, possible = true;
      std::size_t slot = 0;
      for (OperandRole r : widest->roles()) {
        if (r == OperandRole::WEAK_SCALAR) {
          operands.emplace_back(d == &DType::Int32() ? WeakScalar(std::int64_t{3}) : WeakScalar(0.5));
          continue;
        }
        const auto& domains = widest->tensor_domains();
        const DTypeDomain* domain = domains ? &(*domains)[slot] : nullptr;
        ++slot;
        if (!domain || std::find(domain->begin(), domain->end(), d) != domain->end()) {
          operands.emplace_back(*d);
          placed = true;
        } else if (domain->size() == 1) {
          operands.emplace_back(*domain->front());
        } else {
          possible = false;
        }
      }
      std::optional<OperationPlan> expected;
      if (placed && possible) {
        try {
          expected = resolve_operation_plan(spec.name(), operands);
        } catch (const TypeError&) {
        } catch (const NotImplementedError&) {
        }
      }
      EXPECT_EQ(representative_plan(spec.name(), *d), expected) << spec.name() << " " << d->name();
      for (CarrierClass cls : {carrier_class<Generic>(), carrier_class<CPU>()}) {
        const std::optional<OperationCapability> got = capability(cls, spec.name(), *d);
        if (!expected) {
          EXPECT_EQ(got, std::nullopt) << cls.name() << " " << spec.name() << " " << d->name();
          EXPECT_THROW_EXACTLY(require_capability(cls, spec.name(), *d), UnsupportedOpDType);
          continue;
        }
        const std::optional<OperationCapability> entry = matching_capability(cls, *expected);
        EXPECT_EQ(got, entry) << cls.name() << " " << spec.name() << " " << d->name();
        if (got) {
          EXPECT_EQ(got->to_plan(), *expected);
        }
      }
    }
  }
}

TEST(ExecutionAxes_DescriptorQueries, RequireCapabilityByAxis) {
  const CarrierClass cpu = carrier_class<CPU>();
  EXPECT_EQ(require_capability(cpu, "add", DType::Float32(), ExecutionAxis::caller_output).to_plan(), f32_add_plan());
  const OperationCapability i32_add = require_capability(cpu, "add", DType::Int32(), ExecutionAxis::accumulation);
  EXPECT_EQ(execution_axes(cpu, i32_add).accumulation, SupportLevel::Native);  // CPU's kernel read-modify-writes
  const OperationPlan eq = resolve_operation_plan("eq", {DType::Float32(), DType::Float32()});
  try {
    require_capability(cpu, "eq", DType::Float32(), ExecutionAxis::accumulation);
    ADD_FAILURE() << "an Unsupported axis was accepted";
  } catch (const UnsupportedOpDType& e) {
    EXPECT_ERROR_TYPE_IS(e, UnsupportedOpDType);
    EXPECT_EQ(e.backend(), "CPU");
    EXPECT_EQ(e.operation(), "eq");
    EXPECT_EQ(e.dtype(), &DType::Float32());
    EXPECT_EQ(e.axis(), std::optional<ExecutionAxis>(ExecutionAxis::accumulation));
    ASSERT_TRUE(e.plan().has_value());
    EXPECT_EQ(*e.plan(), eq);
    EXPECT_STREQ(e.type_name(), "UnsupportedOpDType");
  }
  // Catchable as UnsupportedOperationPlan (and so as NotImplementedError):
  // base-class catches on purpose.
  EXPECT_THROW(require_capability(cpu, "eq", DType::Float32(), ExecutionAxis::accumulation),
               UnsupportedOperationPlan);
  EXPECT_THROW(require_capability(cpu, "eq", DType::Float32(), ExecutionAxis::accumulation),
               NotImplementedError);
  static_assert(std::is_base_of_v<UnsupportedOperationPlan, UnsupportedOpDType>);
  // By exact plan and axis.
  EXPECT_EQ(require_capability(cpu, f32_add_plan(), ExecutionAxis::strided_output).to_plan(), f32_add_plan());
  EXPECT_THROW_EXACTLY(require_capability(cpu, eq, ExecutionAxis::accumulation), UnsupportedOpDType);
  // Derived: for every entry and axis, the requirement fails iff the level is
  // Unsupported.
  for (CarrierClass cls : {carrier_class<Generic>(), cpu}) {
    for (const OperationCapability& c : capabilities_for_carrier_class(cls)) {
      for (ExecutionAxis axis : all_execution_axes()) {
        if (execution_axes(cls, c).level(axis) == SupportLevel::Unsupported) {
          EXPECT_THROW_EXACTLY(require_capability(cls, c.to_plan(), axis), UnsupportedOpDType)
              << c.to_plan().to_string();
        } else {
          EXPECT_EQ(require_capability(cls, c.to_plan(), axis), c);
        }
      }
    }
  }
}

TEST(ExecutionAxes_DescriptorQueries, MissingEntryRaisesUnsupportedOpDType) {
  for (std::optional<ExecutionAxis> axis : {std::optional<ExecutionAxis>(), std::optional(ExecutionAxis::owned_result)}) {
    try {
      require_capability(carrier_class<Generic>(), "eq", DType::Int32(), axis);
      ADD_FAILURE() << "a missing entry was accepted";
    } catch (const UnsupportedOpDType& e) {
      EXPECT_ERROR_TYPE_IS(e, UnsupportedOpDType);
      EXPECT_EQ(e.backend(), "Generic");
      EXPECT_EQ(e.operation(), "eq");
      EXPECT_EQ(e.dtype(), &DType::Int32());
      EXPECT_EQ(e.axis(), axis);
      EXPECT_FALSE(e.plan().has_value());
    }
  }
  EXPECT_THROW_EXACTLY(require_capability(carrier_class<Generic>(), "caps_test_unknown", DType::Float32()),
                       UnsupportedOpDType);
  EXPECT_THROW_EXACTLY(require_capability(carrier_class<CPU>(), "caps_test_unknown", DType::Float32()),
                       UnsupportedOpDType);
  // An exact plan the class lacks raises the plain UnsupportedOperationPlan.
  const OperationPlan missing("add", {OperandPlan::tensor(DType::Bool()), OperandPlan::tensor(DType::Bool())},
                              Arithmetic::BINARY32, std::nullopt, nullptr, DType::Bool());
  EXPECT_THROW_EXACTLY(require_capability(carrier_class<CPU>(), missing, ExecutionAxis::owned_result),
                       UnsupportedOperationPlan);
}

TEST(ExecutionAxes_DescriptorQueries, CustomClassAxesAreDeclared) {
  ExecutionAxes axes;
  axes.caller_output = SupportLevel::FallbackCopy;
  register_operation_capabilities(Custom<200>::cls(),
                                  std::vector<OperationCapability>{OperationCapability::from_plan(f32_add_plan())},
                                  std::vector<ExecutionAxes>{axes});
  EXPECT_EQ(execution_axes(Custom<200>::cls(), require_capability(Custom<200>::cls(), "add", DType::Float32(),
                                                                  ExecutionAxis::caller_output)),
            axes);
  try {
    require_capability(Custom<200>::cls(), "add", DType::Float32(), ExecutionAxis::strided_output);
    ADD_FAILURE() << "an Unsupported axis was accepted";
  } catch (const UnsupportedOpDType& e) {
    EXPECT_ERROR_TYPE_IS(e, UnsupportedOpDType);
    EXPECT_EQ(e.backend(), Custom<200>::cls().name());
    EXPECT_EQ(e.axis(), std::optional<ExecutionAxis>(ExecutionAxis::strided_output));
  }
}

// ---------------------------------------------------------------- the output path, by level
//
// A custom class that publishes a kernel table (execution.h) for the one plan
// add(Float32, Float32) with chosen axes. Its kernel records where it wrote,
// so the test can tell Native (written into the caller's output) from
// FallbackCopy (written into fresh storage, then copied) and see that an
// Unsupported axis is refused before allocation or kernel entry.

template <int N>
struct KernelProbe {
  static inline int calls = 0;
  static inline const Carrier* last_output = nullptr;
  static inline bool last_accumulate = false;
  static void add_kernel(const KernelCall& call) {
    ++calls;
    last_output = call.output.carrier().get();
    last_accumulate = call.accumulate;
    auto& out = const_cast<ValueCarrier&>(static_cast<const ValueCarrier&>(*call.output.carrier()));
    for (std::int64_t k = 0; k < call.output.size(); ++k) {
      const std::int64_t i = call.output.offset() + call.output.layout()(k);
      float v = call.tensor(0).at_ordinal(k).f + call.tensor(1).at_ordinal(k).f;
      if (call.accumulate) v = out.peek(i).f + v;
      out.poke(i, Value::from_float32(v));
    }
  }
  static void install(const ExecutionAxes& axes) {
    KernelTable table;
    table.add(f32_add_plan(), add_kernel, axes);
    register_kernel_table(Custom<N>::cls(), std::move(table));
  }
  static void reset() {
    calls = 0;
    last_output = nullptr;
    last_accumulate = false;
    Custom<N>::allocations = 0;
  }
};

ExecutionAxes axes_of(SupportLevel caller, SupportLevel strided, SupportLevel accumulation) {
  ExecutionAxes a;
  a.caller_output = caller;
  a.strided_output = strided;
  a.accumulation = accumulation;
  return a;
}

template <int N>
struct KernelBacked {
  Tensor a, b;
  KernelBacked()
      : a(Custom<N>::make(DType::Float32(), f32_values({1.5f, 2, -3})), Shape{3}),
        b(Custom<N>::make(DType::Float32(), f32_values({0.25f, 4, 3})), Shape{3}) {}
  Tensor compact_out() const { return Tensor(Custom<N>::make(DType::Float32(), f32_values({10, 20, 30})), Shape{3}); }
  // Slots 1, 3, 5 of a 7-slot carrier.
  Tensor strided_out() const {
    return Tensor(Custom<N>::make(DType::Float32(), f32_values({-1, 10, -1, 20, -1, 30, -1})), Shape{7}).slice(0, 1, 7, 2);
  }
};

const std::vector<float> kSum{1.75f, 6, 0};

std::vector<float> floats(const Tensor& t) { return TypedTensor<float>(t).values(); }
std::vector<float> floats(const Carrier& c) {
  std::vector<float> v;
  for (std::int64_t i = 0; i < c.size(); ++i) v.push_back(c.get_value(i).f);
  return v;
}

TEST(ExecutionAxes_OutputPath, NativeLevelsWriteTheCallerOutputDirectly) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  using P = KernelProbe<210>;
  P::install(axes_of(SupportLevel::Native, SupportLevel::Native, SupportLevel::Native));
  const KernelBacked<210> k;
  for (bool strided_view : {false, true}) {
    SCOPED_TRACE(strided_view ? "strided" : "compact");
    const Tensor out = strided_view ? k.strided_out() : k.compact_out();
    P::reset();
    const Tensor r = add(k.a, k.b, into(out));
    EXPECT_TRUE(r.is(out));
    EXPECT_EQ(P::calls, 1);
    EXPECT_EQ(P::last_output, out.carrier().get());
    EXPECT_FALSE(P::last_accumulate);
    EXPECT_EQ(Custom<210>::allocations.load(), 0);
    EXPECT_EQ(floats(out), kSum);
    EXPECT_EQ(out.carrier()->version(), 1u);
    // Native accumulation: the kernel reads and writes the output itself.
    P::reset();
    add(k.a, k.b, accumulate_into(out));
    EXPECT_EQ(P::calls, 1);
    EXPECT_EQ(P::last_output, out.carrier().get());
    EXPECT_TRUE(P::last_accumulate);
    EXPECT_EQ(Custom<210>::allocations.load(), 0);
    EXPECT_EQ(floats(out), (std::vector<float>{3.5f, 12, 0}));
    EXPECT_EQ(out.carrier()->version(), 2u);
    if (strided_view) {
      EXPECT_EQ(floats(*out.carrier()), (std::vector<float>{-1, 3.5f, -1, 12, -1, 0, -1}));
    }
  }
}

TEST(ExecutionAxes_OutputPath, FallbackCopyLevelsComputeIntoFreshStorageThenCopy) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  using P = KernelProbe<211>;
  P::install(axes_of(SupportLevel::FallbackCopy, SupportLevel::FallbackCopy, SupportLevel::FallbackCopy));
  const KernelBacked<211> k;
  for (bool strided_view : {false, true}) {
    SCOPED_TRACE(strided_view ? "strided" : "compact");
    const Tensor out = strided_view ? k.strided_out() : k.compact_out();
    P::reset();
    add(k.a, k.b, into(out));
    EXPECT_EQ(P::calls, 1);
    EXPECT_NE(P::last_output, out.carrier().get());
    EXPECT_FALSE(P::last_accumulate);
    EXPECT_EQ(Custom<211>::allocations.load(), 1);
    EXPECT_EQ(floats(out), kSum);
    EXPECT_EQ(out.carrier()->version(), 1u);
    // FallbackCopy accumulation: a plain kernel call, then old + result.
    P::reset();
    add(k.a, k.b, accumulate_into(out));
    EXPECT_NE(P::last_output, out.carrier().get());
    EXPECT_FALSE(P::last_accumulate);
    EXPECT_EQ(floats(out), (std::vector<float>{3.5f, 12, 0}));
    EXPECT_EQ(out.carrier()->version(), 2u);
    if (strided_view) {
      EXPECT_EQ(floats(*out.carrier()), (std::vector<float>{-1, 3.5f, -1, 12, -1, 0, -1}));
    }
  }
}

TEST(ExecutionAxes_OutputPath, NativeCallerOutputWithFallbackStridedOutput) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  using P = KernelProbe<212>;
  P::install(axes_of(SupportLevel::Native, SupportLevel::FallbackCopy, SupportLevel::Unsupported));
  const KernelBacked<212> k;
  const Tensor compact_out = k.compact_out();
  P::reset();
  add(k.a, k.b, into(compact_out));
  EXPECT_EQ(P::last_output, compact_out.carrier().get());
  EXPECT_EQ(Custom<212>::allocations.load(), 0);
  const Tensor strided_out = k.strided_out();
  P::reset();
  add(k.a, k.b, into(strided_out));
  EXPECT_NE(P::last_output, strided_out.carrier().get());
  EXPECT_EQ(Custom<212>::allocations.load(), 1);
  EXPECT_EQ(floats(*strided_out.carrier()), (std::vector<float>{-1, 1.75f, -1, 6, -1, 0, -1}));
  EXPECT_EQ(strided_out.carrier()->version(), 1u);
}

void expect_refused(const std::function<void()>& f, ExecutionAxis axis) {
  try {
    f();
    ADD_FAILURE() << "an Unsupported " << name_of(axis) << " axis was accepted";
  } catch (const UnsupportedOpDType& e) {
    EXPECT_ERROR_TYPE_IS(e, UnsupportedOpDType);
    EXPECT_EQ(e.axis(), std::optional<ExecutionAxis>(axis));
    EXPECT_EQ(e.operation(), "add");
    EXPECT_EQ(e.dtype(), &DType::Float32());
  }
}

TEST(ExecutionAxes_OutputPath, UnsupportedLevelsAreRefusedBeforeAllocationOrKernel) {
  using P = KernelProbe<213>;
  P::install(axes_of(SupportLevel::Unsupported, SupportLevel::Unsupported, SupportLevel::Unsupported));
  const KernelBacked<213> k;
  const Tensor out = k.compact_out();
  P::reset();
  expect_refused([&] { add(k.a, k.b, into(out)); }, ExecutionAxis::caller_output);
  expect_refused([&] { add(k.a, k.b, accumulate_into(out)); },
                 ExecutionAxis::accumulation);
  EXPECT_EQ(P::calls, 0);
  EXPECT_EQ(Custom<213>::allocations.load(), 0);
  EXPECT_EQ(floats(out), (std::vector<float>{10, 20, 30}));
  EXPECT_EQ(out.carrier()->version(), 0u);
  // The owned result is still available.
  EXPECT_EQ(floats(add(k.a, k.b)), kSum);
  EXPECT_EQ(P::calls, 1);
  EXPECT_EQ(Custom<213>::allocations.load(), 1);
}

TEST(ExecutionAxes_OutputPath, UnsupportedStridedOutputIsRefusedForViewsOnly) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  using P = KernelProbe<214>;
  P::install(axes_of(SupportLevel::Native, SupportLevel::Unsupported, SupportLevel::FallbackCopy));
  const KernelBacked<214> k;
  const Tensor strided_out = k.strided_out();
  P::reset();
  expect_refused([&] { add(k.a, k.b, into(strided_out)); }, ExecutionAxis::strided_output);
  expect_refused([&] { add(k.a, k.b, accumulate_into(strided_out)); },
                 ExecutionAxis::strided_output);
  EXPECT_EQ(P::calls, 0);
  EXPECT_EQ(Custom<214>::allocations.load(), 0);
  EXPECT_EQ(floats(*strided_out.carrier()), (std::vector<float>{-1, 10, -1, 20, -1, 30, -1}));
  EXPECT_EQ(strided_out.carrier()->version(), 0u);
  // A compact output of the same class is accepted.
  const Tensor compact_out = k.compact_out();
  add(k.a, k.b, into(compact_out));
  EXPECT_EQ(floats(compact_out), kSum);
  EXPECT_EQ(P::last_output, compact_out.carrier().get());
}

// ---------------------------------------------------------------- caller-provided outputs

template <class C>
Tensor f32(std::initializer_list<float> v, const Shape& s) {
  return make_tensor<C>(v, s);
}
template <class C>
Tensor i32(std::initializer_list<std::int32_t> v, const Shape& s) {
  return make_tensor<C>(v, s);
}

template <class C>
class ExecutionAxes_CallerOutput : public ::testing::Test {};
using Shipped = sw_support::ShippedCarrierTypes;  // every shipped carrier (tests/support/shipped_types.h)
TYPED_TEST_SUITE(ExecutionAxes_CallerOutput, Shipped);

TYPED_TEST(ExecutionAxes_CallerOutput, CheckedInt32OverflowLeavesOutputUnchanged) {
  using C = TypeParam;
  const std::int32_t big = std::numeric_limits<std::int32_t>::max();
  ASSERT_EQ(execution_axes(carrier_class<C>(), require_capability(carrier_class<C>(), i32_add_plan())).caller_output,
            SupportLevel::FallbackCopy);
  const Tensor a = i32<C>({1, big, 3}, Shape{3});
  const Tensor b = i32<C>({1, 1, 1}, Shape{3});
  const Tensor out = i32<C>({7, 8, 9}, Shape{3});
  const std::uint64_t v0 = out.carrier()->version();
  EXPECT_THROW_EXACTLY(add(a, b, into(out)), OverflowError);
  EXPECT_EQ(TypedTensor<std::int32_t>(out).values(), (std::vector<std::int32_t>{7, 8, 9}));
  EXPECT_EQ(out.carrier()->version(), v0);
  // A strided output too, and a weak-scalar plan.
  const Tensor base = i32<C>({0, 1, 2, 3, 4, 5, 6}, Shape{7});
  const Tensor view = base.slice(0, 1, 7, 2);
  const std::uint64_t vb = base.carrier()->version();
  EXPECT_THROW_EXACTLY(add(a, b, into(view)), OverflowError);
  EXPECT_THROW_EXACTLY(mul(a, 65536, into(view)), OverflowError);
  EXPECT_EQ(TypedTensor<std::int32_t>(base).values(), (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(base.carrier()->version(), vb);
  // The same call without overflow writes all of it, one version step.
  const Tensor ok = i32<C>({1, 2, 3}, Shape{3});
  add(ok, b, into(out));
  EXPECT_EQ(TypedTensor<std::int32_t>(out).values(), (std::vector<std::int32_t>{2, 3, 4}));
  EXPECT_EQ(out.carrier()->version(), v0 + 1);
}

TYPED_TEST(ExecutionAxes_CallerOutput, AccumulationOverflowLeavesOutputUnchanged) {
  using C = TypeParam;
  const std::int32_t big = std::numeric_limits<std::int32_t>::max();
  const Tensor a = i32<C>({1, 2}, Shape{2});
  const Tensor out = i32<C>({5, big}, Shape{2});
  EXPECT_THROW_EXACTLY(add(a, a, accumulate_into(out)), OverflowError);
  EXPECT_EQ(TypedTensor<std::int32_t>(out).values(), (std::vector<std::int32_t>{5, big}));
  EXPECT_EQ(out.carrier()->version(), 0u);
}

TYPED_TEST(ExecutionAxes_CallerOutput, BoolAccumulationIsRejectedBeforeTouchingOutput) {
  using C = TypeParam;
  const Tensor a = f32<C>({1, 2}, Shape{2});
  const Tensor b = f32<C>({1, 3}, Shape{2});
  const std::vector<Value> init{Value::from_bool(false), Value::from_bool(true)};
  const Tensor out(C::from_values(init, DType::Bool()), Shape{2});
  try {
    eq(a, b, accumulate_into(out));
    ADD_FAILURE() << "accumulating a Bool result was accepted";
  } catch (const UnsupportedOpDType& e) {
    EXPECT_ERROR_TYPE_IS(e, UnsupportedOpDType);
    EXPECT_EQ(e.backend(), carrier_class<C>().name());
    EXPECT_EQ(e.operation(), "eq");
    EXPECT_EQ(e.dtype(), &DType::Float32());
    EXPECT_EQ(e.axis(), std::optional<ExecutionAxis>(ExecutionAxis::accumulation));
  }
  EXPECT_EQ(out.values(), init);
  EXPECT_EQ(out.carrier()->version(), 0u);
  // Overwriting a Bool output is supported.
  eq(a, b, into(out));
  EXPECT_EQ(out.values(), (std::vector<Value>{Value::from_bool(true), Value::from_bool(false)}));
  EXPECT_EQ(out.carrier()->version(), 1u);
}

TYPED_TEST(ExecutionAxes_CallerOutput, OutputValidationErrors) {
  using C = TypeParam;
  using Other = std::conditional_t<std::is_same_v<C, Generic>, CPU, Generic>;
  const Tensor a = f32<C>({1, 2, 3}, Shape{3});
  const Tensor b = f32<C>({4, 5, 6}, Shape{3});
  auto unchanged = [](const Tensor& out, const std::vector<Value>& before, std::uint64_t v) {
    EXPECT_EQ(storage_of(*out.carrier()), before);
    EXPECT_EQ(out.carrier()->version(), v);
  };
  {  // wrong dtype
    const Tensor out = i32<C>({0, 0, 0}, Shape{3});
    EXPECT_THROW_EXACTLY(add(a, b, into(out)), TypeError);
    unchanged(out, storage_of(*out.carrier()), 0);
  }
  {  // wrong shape
    const Tensor out = f32<C>({0, 0, 0, 0}, Shape{4});
    EXPECT_THROW_EXACTLY(add(a, b, into(out)), ValueError);
    const Tensor out2 = f32<C>({0, 0, 0}, Shape{1, 3});
    EXPECT_THROW_EXACTLY(add(a, b, into(out2)), ValueError);
    unchanged(out, storage_of(*out.carrier()), 0);
    unchanged(out2, storage_of(*out2.carrier()), 0);
  }
  {  // another carrier class
    const Tensor out = f32<Other>({0, 0, 0}, Shape{3});
    EXPECT_THROW_EXACTLY(add(a, b, into(out)), TypeError);
    unchanged(out, storage_of(*out.carrier()), 0);
  }
  {  // immutable
    const std::vector<Value> zeros(3, Value::from_float32(0));
    const Tensor out(C::from_values(zeros, DType::Float32(), false), Shape{3});
    EXPECT_THROW_EXACTLY(add(a, b, into(out)), RuntimeError);
    EXPECT_THROW_EXACTLY(add(a, b, accumulate_into(out)), RuntimeError);
    unchanged(out, zeros, 0);
  }
  {  // released
    const Tensor out = f32<C>({0, 0, 0}, Shape{3});
    out.carrier()->release();
    EXPECT_THROW_EXACTLY(add(a, b, into(out)), RuntimeError);
    EXPECT_EQ(out.carrier()->version(), 0u);
  }
  {  // sharing a carrier with an operand (the operand itself, or a view of it)
    const Tensor big = f32<C>({1, 2, 3, 4, 5, 6}, Shape{6});
    const Tensor lo = big.slice(0, 0, 3), hi = big.slice(0, 3, 6);
    const std::vector<Value> before = storage_of(*big.carrier());
    EXPECT_THROW_EXACTLY(add(lo, b, into(lo)), ValueError);
    EXPECT_THROW_EXACTLY(add(lo, b, into(hi)), ValueError);
    EXPECT_THROW_EXACTLY(add(a, lo, accumulate_into(hi)), ValueError);
    unchanged(big, before, 0);
  }
}

TYPED_TEST(ExecutionAxes_CallerOutput, NativeAndFallbackWritesAreOneVersionStep) {
  const NoGradGuard no_graph;  // a numeric check: no graph (accumulation into an output is refused under grad mode)
  using C = TypeParam;
  const Tensor a = f32<C>({1.5f, -2, 3}, Shape{3});
  const Tensor b = f32<C>({0.25f, 2, -3}, Shape{3});
  // Native (binary32 add) into a strided view.
  const Tensor base = f32<C>({9, 9, 9, 9, 9, 9, 9}, Shape{7});
  const Tensor view = base.slice(0, 1, 7, 2);
  add(a, b, into(view));
  EXPECT_EQ(TypedTensor<float>(base).values(), (std::vector<float>{9, 1.75f, 9, 0, 9, 0, 9}));
  EXPECT_EQ(base.carrier()->version(), 1u);
  // Accumulate (FallbackCopy): old + result in binary32.
  add(a, b, accumulate_into(view));
  EXPECT_EQ(TypedTensor<float>(base).values(), (std::vector<float>{9, 3.5f, 9, 0, 9, 0, 9}));
  EXPECT_EQ(base.carrier()->version(), 2u);
  // FallbackCopy (checked Int32) into a compact output.
  const Tensor ia = i32<C>({1, 2, 3}, Shape{3});
  const Tensor iout = i32<C>({0, 0, 0}, Shape{3});
  mul(ia, ia, into(iout));
  EXPECT_EQ(TypedTensor<std::int32_t>(iout).values(), (std::vector<std::int32_t>{1, 4, 9}));
  mul(ia, ia, accumulate_into(iout));
  EXPECT_EQ(TypedTensor<std::int32_t>(iout).values(), (std::vector<std::int32_t>{2, 8, 18}));
  EXPECT_EQ(iout.carrier()->version(), 2u);
}

}  // namespace
}  // namespace sw_caps
