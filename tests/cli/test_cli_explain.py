#!/usr/bin/env python3
"""The contract of `strideweave explain` (docs/cli.md; issue 11 step 8).

Runs the real binary (STRIDEWEAVE_BIN): a mixed-dtype add on each shipped
carrier (bound call, plan, result spec, the capability entry with its axes,
the route, what ran, the output), a call the policy refuses (the error ends
the record, exit 1), an unsupported operation name, usage errors (exit 2),
and the text form. Prints one line per failed check and a closing
'N passed, N failed' line; exits non-zero on any failure.
"""
import json
import os
import subprocess
import sys

BIN = os.environ.get("STRIDEWEAVE_BIN", "build/tools/strideweave")
HANG_BOUND_S = 30 * 60  # only a hung binary reaches it; not a timing requirement
passed = failed = 0


def run(*args):
    p = subprocess.run([BIN, "explain", *args], capture_output=True, text=True, timeout=HANG_BOUND_S)
    return p.returncode, p.stdout, p.stderr


def check(name, condition, detail=""):
    global passed, failed
    if condition:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")


for carrier, name in (("cpu", "CPU"), ("generic", "Generic")):
    rc, out, err = run("add", "tensor:float32:[1,2]", "tensor:int32:[3,4]", "--carrier", carrier, "--json")
    check(f"{carrier}: exit 0", rc == 0, err)
    e = json.loads(out) if rc == 0 else {}
    check(f"{carrier}: bound call names operands and carrier",
          e.get("bound_call") == f"add(a=tensor float32 (2) on {name}, b=tensor int32 (2) on {name})", e.get("bound_call"))
    plan = e.get("plan") or {}
    check(f"{carrier}: the central plan converts int32 to float32",
          [o["convert_to"] for o in plan.get("operands", [])] == ["float32", "float32"] and plan.get("output") == "float32",
          plan)
    check(f"{carrier}: one compact float32 result spec",
          e.get("results") == [{"dtype": "float32", "shape": [2], "stride": [1], "layout": "(2):(1)", "alias_of": None}],
          e.get("results"))
    admitted = e.get("admitted_by") or {}
    check(f"{carrier}: the admitting capability is the plan itself", admitted.get("plan") == plan, admitted)
    check(f"{carrier}: with all five axes", sorted((admitted.get("axes") or {}).keys()) ==
          sorted(["owned_result", "borrowed_input", "caller_output", "strided_output", "accumulation"]), admitted)
    check(f"{carrier}: the placement (issue 20 step 3)", e.get("placement") == "host", e.get("placement"))
    check(f"{carrier}: route and ran", e.get("route") == "kernel table" and name in (e.get("ran") or ""), e)
    check(f"{carrier}: no candidates on a definition-free carrier", e.get("candidates") == [], e.get("candidates"))
    check(f"{carrier}: the output", e.get("outputs") == [{"dtype": "float32", "shape": [2], "values": [4.0, 6.0]}],
          e.get("outputs"))
    check(f"{carrier}: no error", e.get("error") is None, e.get("error"))

# A refused call: the record stops at the failing step, exit 1.
rc, out, _ = run("add", "tensor:bool:[true]", "tensor:bool:[true]", "--json")
e = json.loads(out) if out.strip() else {}
check("refused: exit 1", rc == 1, rc)
check("refused: the error is recorded", (e.get("error") or {}).get("type") == "NotImplementedError", e.get("error"))
check("refused: no plan", e.get("plan") is None and e.get("outputs") == [], e)
check("refused: the bound call is still there", e.get("bound_call", "").startswith("add(a=tensor bool"), e)

# Options appear in the bound call with their defaults filled in.
rc, out, _ = run("reduce_sum", "tensor:float32:[[1,2],[3,4]]", "--option", "axes=[0]", "--json")
e = json.loads(out) if rc == 0 else {}
check("options: bound", "axes=[0]" in e.get("bound_call", "") and "keepdims=false" in e.get("bound_call", ""),
      e.get("bound_call"))
check("options: output", e.get("outputs", [{}])[0].get("values") == [4.0, 6.0], e.get("outputs"))

# An unknown operation: the library's LookupError, exit 1.
rc, out, _ = run("no_such_op", "scalar:1", "--json")
check("unknown operation: exit 1 with LookupError", rc == 1 and json.loads(out).get("error") == "LookupError", out)

# Usage errors: exit 2 before anything runs.
rc, _, err = run("add", "tensor:float32", "--json")
check("usage: a malformed literal is exit 2", rc == 2, (rc, err))
rc, _, err = run("add", "--option", "noequals")
check("usage: a malformed option is exit 2", rc == 2, (rc, err))

# The text form: one step per line.
rc, out, _ = run("add", "tensor:float32:[1]", "tensor:float32:[2]")
lines = [line.split(":")[0].strip() for line in out.splitlines()]
check("text: every step", rc == 0 and lines[:8] == ["operation", "bound call", "plan", "result 0", "carrier",
                                                    "placement", "admitted", "axes"], lines)

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
