"""The short tour `python3 -m strideweave` prints: the same text as the
command-line tool's `strideweave tour` (tools/cmd_tour.cpp), computed through
the Python surface."""

import strideweave as sw


def _text(t):
    """How the command line prints a tensor (tools/values_json.cpp, tensor_text)."""
    extents = ",".join(str(e) for e in t.shape.extents)
    return f"{type(t.carrier).__name__} {t.dtype().name} ({extents}) {sw.format_values(t, -1)}"


def main():
    print(f"strideweave {sw.__version__} - a C++20 tensor runtime")
    print("Every operation call resolves to one immutable OperationPlan through the central dtype policy;")
    print("each carrier executes exactly the plans it registered, and nothing else.")
    print()
    print(
        f"Registered operations: {len(sw.registered_operations())} "
        f"({len(sw.resolvable_plans())} resolvable plans with the default probes)"
    )
    print("Carriers with kernels:")
    for cls in (sw.Generic, sw.CPU):
        print(f"  {cls.__name__:<8} {len(sw.capabilities_for_carrier_class(cls))} plans")
    note = "" if sw.threading_available() else "; this build runs them on the calling thread"
    print(f"CPU kernels use {sw.num_threads()} thread(s) (set_num_threads, STRIDEWEAVE_NUM_THREADS{note})")
    print()

    # make_tensor<CPU>({1, ..., 6}, Shape{2, 3}): values in logical order
    # (first mode fastest), as the C++ tour builds them.
    a = sw.Tensor(sw.CPU(6), 0, sw.Layout.compact(sw.Shape(2, 3)))
    for i, v in enumerate([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]):
        a.carrier[i] = v
    b = sw.tensor([[10, 20, 30]])
    print(f"a = {_text(a)}   (make_tensor<CPU>({{1, ..., 6}}, Shape{{2, 3}}): first mode fastest)")
    print(f"b = {_text(b)}")
    print()

    def step(label, plan, result):
        print(f"{label}\n  plan:   {plan}\n  result: {_text(result)}")

    f32, i32 = a.dtype(), b.dtype()
    step(
        "add(a, b)  # Int32 and Float32 meet: both convert to Float32; b broadcasts",
        sw.resolve_operation_plan("add", f32, i32),
        sw.add(a, b),
    )
    step("mul(b, 2)  # an integer weak scalar keeps Int32 (checked)", sw.resolve_operation_plan("mul", i32, 2), sw.mul(b, 2))
    step(
        "mul(b, 0.5)  # a float weak scalar selects the Float32 plan",
        sw.resolve_operation_plan("mul", i32, 0.5),
        sw.mul(b, 0.5),
    )
    step(
        "relu(a + (-3.5))",
        sw.resolve_operation_plan("relu", f32),
        sw.relu(sw.add(a, sw.mul(sw.tensor([-3.5]), 1))),
    )
    step("reduce_sum(a, axes=[1])", sw.resolve_operation_plan("reduce_sum", f32), sw.reduce_sum(a, axes=[1]))
    wide = sw.OperationExecutionOptions("reduce_sum", sw.DType.Float64)
    step(
        "reduce_sum(a) with the Float64 accumulator",
        sw.resolve_operation_plan("reduce_sum", f32, options=wide),
        sw.reduce_sum(a, options=wide),
    )
    step("matmul(a, permute(a))", sw.resolve_operation_plan("matmul", f32, f32), sw.matmul(a, a.permute(1, 0)))
    fused = sw.OperationExecutionOptions("matmul", arithmetic=sw.Arithmetic.BINARY32_FUSED)
    step(
        "matmul(a, permute(a)) contracted on request (beyond the specification)",
        sw.resolve_operation_plan("matmul", f32, f32, options=fused),
        sw.matmul(a, a.permute(1, 0), options=fused),
    )
    try:
        sw.mul(b, 2**31)
    except OverflowError as e:
        print(f"mul(b, 2**31) -> OverflowError: {e}")
    print()
    print("More: strideweave plans --json | strideweave resolve add dtype:int32 dtype:float32 --json")
    print("      strideweave --help lists every subcommand")
    return 0
