"""A helper shared by the option tests (test_option_values.py,
test_option_kinds.py): a one-operand definition with one option whose
resolve records what it was given."""

import itertools

import strideweave as sw
from strideweave import operation as op

F32 = sw.DType.Float32
_names = itertools.count()


def echo_definition(spec=None):
    """(definition, seen): `seen` gets the bound options and counts resolve
    calls under "resolves". The option is `spec` (default OptionSpec("v"),
    which accepts anything)."""
    seen = {"resolves": 0}

    def resolve(call):
        seen["resolves"] += 1
        seen.update(call.options)
        x = call.operands[0]
        plan = sw.OperationPlan(operation=call.definition.name, operands=(sw.OperandPlan(sw.OperandRole.TENSOR,
                                x.dtype(), F32),), compute=sw.Arithmetic.BINARY32, accumulation=None,
                                accumulator_dtype=None, output=F32)
        return op.ResolvedInvocation(call, plan, [op.ResultSpec.compact(F32, x.shape)])

    schema = op.OperationSchema([op.OperandSpec("x", op.OperandKind.TENSOR)], [spec or op.OptionSpec("v")])
    return op.define_operation(f"pytest_options{next(_names)}.echo", schema, resolve, vjp=op.NON_DIFFERENTIABLE), seen
