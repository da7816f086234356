#!/usr/bin/env python3
"""Checks the symbols libstrideweave.so exports (include/strideweave/export.h).

The library is compiled with -fvisibility=hidden: it must export what the
public headers declare and nothing of the internal namespaces under src/,
except the declarations marked STRIDEWEAVE_TEST_API (internal hooks the test
suite and the tools use), which are read from the sources.

usage: check_exports.py LIBRARY
Exit status 0 when clean; otherwise each problem is printed and the status is 1.
"""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
INTERNAL = ("strideweave::frontend::", "strideweave::storage::", "strideweave::policy::",
            "strideweave::capability_registry::", "strideweave::carriers::",
            "strideweave::formats::")
PREFIXES = ("typeinfo for ", "typeinfo name for ", "vtable for ", "guard variable for ", "VTT for ")
# A few public entry points that must be there (one per layer).
REQUIRED = ("strideweave::add(", "strideweave::resolve_operation_plan(", "strideweave::Tensor::to_string",
            "typeinfo for strideweave::TypeError", "strideweave::register_operation_capabilities(",
            "strideweave::CPU::create(", "strideweave::fallback_copy_count(", "strideweave::format_values")


def test_api_names():
    """The function names declared with STRIDEWEAVE_TEST_API under src/."""
    names = set()
    for path in (ROOT / "src").rglob("*.h"):
        text = path.read_text()
        for m in re.finditer(r"STRIDEWEAVE_TEST_API\s+(?:class\s+(\w+)|[\w:<>*&\s]*?\b(\w+)\s*\()", text):
            names.add(m.group(1) or m.group(2))
        # `class STRIDEWEAVE_TEST_API Name` (the attribute's place for a class).
        names.update(re.findall(r"\bclass\s+STRIDEWEAVE_TEST_API\s+(\w+)", text))
    return names


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = subprocess.run(["nm", "-DC", "--defined-only", sys.argv[1]], check=True, capture_output=True, text=True)
    symbols = [line.split(" ", 2)[2] for line in out.stdout.splitlines() if line.count(" ") >= 2]
    allowed = test_api_names()
    problems = []
    for sym in symbols:
        name = sym
        for p in PREFIXES:
            if name.startswith(p):
                name = name[len(p):]
        if not name.startswith(INTERNAL):
            continue
        qualified = name.split("(", 1)[0]
        parts = qualified.split("::")
        if any(part in allowed for part in parts):
            continue
        problems.append(f"exported internal symbol: {sym}")
    for want in REQUIRED:
        if not any(s.startswith(want) for s in symbols):
            problems.append(f"missing public symbol: {want}...")
    for p in problems:
        print(p)
    print(f"check_exports: {len(symbols)} exported symbols, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
