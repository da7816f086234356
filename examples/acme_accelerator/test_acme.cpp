// The acme accelerator end to end (issue 11 step 6): forward through
// ordinary dispatch (the preferred acme.tiled, and acme.generic after
// acme.tiled declines a shape at run time), the static capability set,
// opcheck of every pattern against the reference (values, dtype, layout,
// aliasing, mutation; the VJP against finite differences), a direct
// VJP call against gradients worked out by hand, and backward() through
// the call agreeing with it, and moves to the accelerator and back. Prints one line per failed
// check and 'acme: N passed, N failed'; exits 1 on any failure.
#include <strideweave/strideweave.h>

#include <cmath>
#include <iostream>
#include <string>

#include "acme.h"

namespace {

using namespace strideweave;
namespace op = strideweave::operation;

int passed = 0, failed = 0;
void check(const std::string& name, bool ok, const std::string& detail = "") {
  if (ok) {
    ++passed;
  } else {
    ++failed;
    std::cout << "FAIL " << name << ": " << detail << "\n";
  }
}

std::vector<float> floats(const Tensor& t) {
  std::vector<float> out;
  for (const Value& v : t.values()) out.push_back(v.f);
  return out;
}
std::string text(const std::vector<float>& v) {
  std::string s;
  for (float x : v) s += std::to_string(x) + " ";
  return s;
}

// Values are in logical order, first mode fastest: (i, j) at i + m * j.
void forward() {
  // x (2, 2) = [[1, 2], [3, 4]], w (2, 2) = [[1, 0], [0, -1]], b = [0.5, 1]:
  // x @ w = [[1, -2], [3, -4]]; + b = [[1.5, -1], [3.5, -3]]; relu.
  const Tensor x = acme::device_tensor({1, 3, 2, 4}, Shape::of({2, 2}));
  const Tensor w = acme::device_tensor({1, 0, 0, -1}, Shape::of({2, 2}));
  const Tensor b = acme::device_tensor({0.5f, 1}, Shape::of({2}));
  const Explanation even = explain(*acme::fused_linear(), {x, w, b});
  check("even shape: no error", !even.error_type, even.error_message.value_or(""));
  check("even shape: acme.tiled ran", even.ran == std::optional<std::string>("acme.tiled"), to_text(even));
  check("even shape: values", !even.outputs.empty() && floats(even.outputs[0]) == std::vector<float>{1.5f, 3.5f, 0, 0},
        even.outputs.empty() ? "" : text(floats(even.outputs[0])));
  // x (3, 2): m odd, so acme.tiled declines at run time and acme.generic runs.
  const Tensor x3 = acme::device_tensor({1, 3, 0, 2, 4, 0}, Shape::of({3, 2}));
  const Explanation odd = explain(*acme::fused_linear(), {x3, w, b});
  check("odd shape: acme.generic ran", odd.ran == std::optional<std::string>("acme.generic"), to_text(odd));
  check("odd shape: acme.tiled declined first, with its reason",
        odd.candidates.size() == 2 && odd.candidates[0].kernel_id == "acme.tiled" &&
            odd.candidates[0].outcome == CandidateTrace::Outcome::Declined &&
            odd.candidates[0].reason.find("even m and n") != std::string::npos && odd.candidates[0].source == "acme@1.0",
        to_text(odd));
  const std::vector<Tensor> y = (*acme::fused_linear())({x3, w, b});
  check("odd shape: values through an ordinary call",
        floats(y[0]) == std::vector<float>{1.5f, 3.5f, 0.5f, 0, 0, 1}, text(floats(y[0])));
  check("the result lives on the accelerator", y[0].carrier()->exact_class() == x.carrier()->exact_class());
  // Static capabilities are the pack's one plan, whatever ran or declined.
  check("one static capability", x.carrier()->operation_capabilities("acme.fused_linear").size() == 1);
  // A shape mismatch is the definition's ValueError, before any kernel.
  bool refused = false;
  try {
    (*acme::fused_linear())({x3, x3, b});
  } catch (const ValueError&) {
    refused = true;
  }
  check("mismatched shapes: ValueError", refused);
}

void with_opcheck() {
  const op::OpcheckReport r = op::opcheck(*acme::fused_linear());  // the inputs acme registered
  check("opcheck passes", r.passed(), op::to_text(r));
  check("opcheck: one carrier, two patterns",
        r.carriers.size() == 1 && r.carriers[0].patterns.size() == 2 &&
            r.carriers[0].patterns[0].kernel_id == "acme.tiled" && r.carriers[0].patterns[1].kernel_id == "acme.generic",
        op::to_text(r));
  check("opcheck: acme.tiled declined the odd sample", r.count(op::OpcheckStatus::DECLINED) > 0, op::to_text(r));
  check("opcheck: the VJP of x, w and b matched finite differences",
        r.carriers.size() == 1 && r.carriers[0].gradients.size() == 6, op::to_text(r));
  std::cout << op::to_text(r).substr(0, op::to_text(r).find('\n')) << "\n";
}

// A direct VJP call (operation::VJPContext) on a call worked out by hand:
// x = [[1, 2]], w = [[3], [-1]], b = [0.5]: z = 3 - 2 + 0.5 = 1.5 > 0, y = 1.5.
// With cotangent 2: dx = 2 w^T = [6, -2], dw = 2 x^T = [2, 4], db = [2].
// With b = [-5] the relu is off and every gradient is 0.
void direct_vjp() {
  const auto d = acme::fused_linear();
  const auto& vjp = std::get<op::VjpFn>(d->vjp());
  for (const float bias : {0.5f, -5.0f}) {
    const Tensor x = acme::device_tensor({1, 2}, Shape::of({1, 2}));
    const Tensor w = acme::device_tensor({3, -1}, Shape::of({2, 1}));
    const Tensor b = acme::device_tensor({bias}, Shape::of({1}));
    const auto invocation = op::resolve_call(*d, {x, w, b});
    const std::vector<Tensor> y = (*d)({x, w, b});  // the kernel's own output
    const op::VJPContext context(invocation, y, {x, w});
    const std::vector<std::optional<Tensor>> cot = {acme::device_tensor({2}, Shape::of({1, 1}))};
    const auto g = vjp(context, cot);
    const bool on = bias > 0;
    check("vjp: three gradients", g.size() == 3 && g[0] && g[1] && g[2]);
    if (g.size() != 3 || !g[0] || !g[1] || !g[2]) continue;
    check("vjp: dx", floats(*g[0]) == (on ? std::vector<float>{6, -2} : std::vector<float>{0, 0}), text(floats(*g[0])));
    check("vjp: dw", floats(*g[1]) == (on ? std::vector<float>{2, 4} : std::vector<float>{0, 0}), text(floats(*g[1])));
    check("vjp: db", floats(*g[2]) == (on ? std::vector<float>{2} : std::vector<float>{0}), text(floats(*g[2])));
    check("vjp: gradients on the accelerator", g[0]->carrier()->exact_class() == x.carrier()->exact_class());
    // backward() through the definition-backed call (operation-semantics
    // "Automatic differentiation belongs to the semantic definition"): the
    // same call with x, w and b requiring grad leaves x.grad(), w.grad() and
    // b.grad() equal to the direct VJP's gradients, on the accelerator.
    Tensor gx = acme::device_tensor({1, 2}, Shape::of({1, 2}));
    Tensor gw = acme::device_tensor({3, -1}, Shape::of({2, 1}));
    Tensor gb = acme::device_tensor({bias}, Shape::of({1}));
    const std::vector<Tensor> gy = (*d)({gx, gw, gb});
    check("backward: the result records the call", gy.size() == 1 && gy[0].requires_grad());
    if (gy.size() != 1) continue;
    gy[0].backward(acme::device_tensor({2}, Shape::of({1, 1})));
    const std::optional<Tensor> dx = gx.grad(), dw = gw.grad(), db = gb.grad();
    check("backward: three leaf gradients", dx && dw && db);
    if (!dx || !dw || !db) continue;
    check("backward: x.grad == vjp dx", floats(*dx) == floats(*g[0]), text(floats(*dx)));
    check("backward: w.grad == vjp dw", floats(*dw) == floats(*g[1]), text(floats(*dw)));
    check("backward: b.grad == vjp db", floats(*db) == floats(*g[2]), text(floats(*db)));
    check("backward: gradients on the accelerator", dx->carrier()->exact_class() == gx.carrier()->exact_class());
  }
}

// Moves to and from the accelerator (issue 20 step 4): the arena is host
// memory, so the one move dispatcher picks the framework's memcpy route both
// ways, and the values make the round trip.
void moves() {
  const std::vector<float> values{1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.5f};
  std::vector<Value> vs;
  for (float v : values) vs.push_back(Value::from_float32(v));
  const Tensor on_cpu(CPU::from_values(vs, DType::Float32()), Shape{6});
  const std::shared_ptr<Carrier> device = acme::device_carrier(6);
  const MoveRouteInfo up = describe_move_route(*on_cpu.carrier(), *device);
  check("CPU -> acme: the elementwise fallback through host memory",
        up.kind == MoveRouteKind::ElementwiseFallback && up.copy == MoveCopyPath::HostMemory,
        std::string(to_string(up.kind)) + " " + to_string(up.copy));
  const Tensor there = move(on_cpu, device);
  check("CPU -> acme: values", floats(there) == values, text(floats(there)));
  check("CPU -> acme: the source is released", on_cpu.carrier()->is_released());
  const std::shared_ptr<Carrier> back_to = CPU::create(6);
  const Tensor back = move(there, back_to);
  check("acme -> CPU: values", floats(back) == values, text(floats(back)));
  check("acme -> CPU: one version step", back_to->version() == 1);
}

// The built-in add on the accelerator (acme.add): the typed function, by
// name and under grad mode (the built-in's VJP), with broadcasting, bit for
// bit the CPU carrier's values.
void builtin_add() {
  const std::vector<float> xs{1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.5f}, ys{0.25f, 1.0f, -3.25f};
  const Tensor x = acme::device_tensor(xs, Shape::of({3, 2})), y = acme::device_tensor(ys, Shape::of({3, 1}));
  std::vector<Value> xv, yv;
  for (float v : xs) xv.push_back(Value::from_float32(v));
  for (float v : ys) yv.push_back(Value::from_float32(v));
  const Tensor cx(CPU::from_values(xv, DType::Float32()), Shape::of({3, 2}));
  const Tensor cy(CPU::from_values(yv, DType::Float32()), Shape::of({3, 1}));
  const Tensor sum = add(x, y);
  check("add: the result lives on the accelerator", sum.carrier()->exact_class() == x.carrier()->exact_class());
  check("add: broadcast values equal CPU's", floats(sum) == floats(add(cx, cy)), text(floats(sum)));
  check("add: same shapes", floats(add(x, x)) == floats(add(cx, cx)), text(floats(add(x, x))));
  check("add: by name", floats(call_operation("add", std::vector<CallOperand>{x, x}).results[0]) == floats(add(cx, cx)));
  check("add: one static capability", x.carrier()->operation_capabilities("add").size() == 1);
  // Same shapes: add's VJP passes the cotangent to both operands (acme has
  // no reduce_sum for a broadcast operand's gradient).
  const Tensor x2 = acme::device_tensor(xs, Shape::of({3, 2}));
  add(x, x2).backward(acme::device_tensor({1, 2, 3, 4, 5, 6}, Shape::of({3, 2})));
  const std::optional<Tensor> gx = x.grad(), gx2 = x2.grad();
  const std::vector<float> cot{1, 2, 3, 4, 5, 6};
  check("add: gradients through the built-in VJP", gx && gx2 && floats(*gx) == cot && floats(*gx2) == cot);
}

}  // namespace

int main() {
  acme::register_acme();
  try {
    forward();
    with_opcheck();
    direct_vjp();
    moves();
    builtin_add();
  } catch (const Error& e) {
    check("no unexpected error", false, std::string(e.type_name()) + ": " + e.what());
  }
  std::cout << "acme: " << passed << " passed, " << failed << " failed\n";
  return failed == 0 ? 0 : 1;
}
