#!/usr/bin/env python3
"""Generates the operation section of python/strideweave/__init__.pyi from the
running module (issue 20, step 7: one home per operation).

The built-in operations come from include/strideweave/operations.def; the
library builds one record per row, the binding makes one Python function per
public record, and this script writes one stub line per function from what
the function itself declares: its parameters as inspect sees them (operands
positional-only, options keyword-only, in schema order) and each option's
default. Nothing about an operation is written here by hand, so adding a row
to operations.def changes the stub only by running this script.

Annotations follow from the parameters:
  - an operand is `_Operand` (a Tensor, or a number where the operation has a
    weak-scalar or rank-0 overload: docs/python.md, "Python numbers");
  - `out` is `_Out`; `options` (reduce_sum, matmul) is
    `OperationExecutionOptions | None`;
  - an option with a bool, int or float default has that type; a required
    option, or one whose default is None, is `Any`;
  - a function without `out=` is a typed function of two plans (sort, topk)
    and returns `SortResult`; every other returns `Tensor`.

Usage (from a build tree, the module importable):
  PYTHONPATH=build/python /usr/bin/python3 scripts/gen_stub.py          # rewrite
  PYTHONPATH=build/python /usr/bin/python3 scripts/gen_stub.py --check  # exit 1 on drift
"""

from __future__ import annotations

import argparse
import inspect
import pathlib
import sys

BEGIN = "# BEGIN GENERATED: every public operation (scripts/gen_stub.py from operations.def); do not edit\n"
END = "# END GENERATED\n"
DEFAULT_STUB = pathlib.Path(__file__).resolve().parent.parent / "python" / "strideweave" / "__init__.pyi"


def _annotation(parameter: inspect.Parameter) -> str:
    if parameter.name == "out":
        return "_Out"
    if parameter.name == "options":
        return "OperationExecutionOptions | None"
    default = parameter.default
    if default is inspect.Parameter.empty or default is None:
        return "Any"
    for kind in (bool, int, float):  # bool before int: True is an int
        if type(default) is kind:
            return kind.__name__
    raise TypeError(f"gen_stub: no annotation for the default {default!r} of option '{parameter.name}'")


def operation_line(name: str, function) -> str:
    signature = inspect.signature(function)
    positional, keyword = [], []
    for p in signature.parameters.values():
        if p.kind is inspect.Parameter.POSITIONAL_ONLY:
            positional.append(f"{p.name}: _Operand")
        elif p.kind is inspect.Parameter.KEYWORD_ONLY:
            has_default = p.default is not inspect.Parameter.empty
            keyword.append(f"{p.name}: {_annotation(p)}" + (" = ..." if has_default else ""))
        else:
            raise TypeError(f"gen_stub: parameter '{p.name}' of {name} is neither positional-only nor keyword-only")
    returns = "Tensor" if "out" in signature.parameters else "SortResult"
    parameters = ", ".join(positional + ["/"] + (["*"] + keyword if keyword else []))
    return f"def {name}({parameters}) -> {returns}: ...\n"


def generated_section(module) -> str:
    lines = [operation_line(name, getattr(module, name)) for name in sorted(module.OPERATION_NAMES)]
    return BEGIN + "".join(lines) + END


def render(stub_text: str, module) -> str:
    begin, end = stub_text.find(BEGIN), stub_text.find(END)
    if begin < 0 or end < begin:
        raise ValueError("gen_stub: the stub has no BEGIN/END GENERATED markers")
    return stub_text[:begin] + generated_section(module) + stub_text[end + len(END):]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the stub differs from the generated one")
    parser.add_argument("--stub", type=pathlib.Path, default=DEFAULT_STUB)
    args = parser.parse_args(argv)
    import strideweave

    current = args.stub.read_text()
    wanted = render(current, strideweave)
    if args.check:
        if current != wanted:
            print(f"{args.stub}: the operation section differs from the module; run scripts/gen_stub.py",
                  file=sys.stderr)
            return 1
        return 0
    if current != wanted:
        tmp = args.stub.with_suffix(".pyi.tmp")
        tmp.write_text(wanted)
        tmp.replace(args.stub)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
