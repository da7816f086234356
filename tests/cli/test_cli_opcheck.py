#!/usr/bin/env python3
"""The contract of `strideweave check --plugin PATH --operation NAME` for
user-defined operations (opcheck; docs/opcheck.md, docs/cli.md; issue 11
step 7).

Runs the real binary (STRIDEWEAVE_BIN) with the test plugin
(STRIDEWEAVE_PLUGIN, tests/cli/plugin/opcheck_plugin.cpp): a correct
operation passes (exit 0) with one report per carrier, pattern and case; a
kernel planted with a wrong value fails (exit 1) naming the field; the text
form; a user-defined name beside a built-in one; an unknown name without the
plugin; a plugin that cannot be loaded. Prints one line per failed check and
a closing 'N passed, N failed' line; exits non-zero on any failure.
"""
import json
import os
import subprocess
import sys

BIN = os.environ.get("STRIDEWEAVE_BIN", "build/tools/strideweave")
PLUGIN = os.environ["STRIDEWEAVE_PLUGIN"]
HANG_BOUND_S = 30 * 60  # only a hung binary reaches it; not a timing requirement
passed = failed = 0


def run(*args):
    p = subprocess.run([BIN, "check", *args], capture_output=True, text=True, timeout=HANG_BOUND_S)
    return p.returncode, p.stdout, p.stderr


def check(name, condition, detail=""):
    global passed, failed
    if condition:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")


# A correct kernel: every case passes, gradients included.
rc, out, err = run("--plugin", PLUGIN, "--operation", "cliplugin.double", "--json")
check("correct: exit 0", rc == 0, out + err)
reports = (json.loads(out) if out.strip() else {}).get("opcheck", [])
check("correct: one report", len(reports) == 1, reports)
r = reports[0] if reports else {}
check("correct: named", r.get("operation") == "cliplugin.double", r)
check("correct: nothing failed, cases passed", r.get("failed") == 0 and r.get("passed", 0) > 5, r)
carriers = r.get("carriers", [])
check("correct: one carrier advertising it", len(carriers) == 1 and carriers[0]["problem"] is None, carriers)
patterns = carriers[0]["patterns"] if carriers else []
check("correct: the one pattern, with its source", [(p["kernel_id"], p["source"]) for p in patterns] ==
      [("double", "built-in")], patterns)
variants = {c["variant"] for p in patterns for c in p["cases"]}
check("correct: generated inputs of every kind",
      {"random", "edge values", "strided", "transposed", "broadcast", "empty (extent 2 -> 0)"} <= variants, variants)
check("correct: every case has the documented keys",
      all(set(c) == {"sample", "variant", "status", "field", "message"} for p in patterns for c in p["cases"]), patterns)
grads = carriers[0]["gradients"] if carriers else []
check("correct: the VJP checked against finite differences",
      [(g["variant"], g["status"]) for g in grads] == [("x", "passed")], grads)

# A kernel wrong for negative inputs: exit 1, field "values".
rc, out, err = run("--plugin", PLUGIN, "--operation", "cliplugin.broken", "--json")
check("broken: exit 1", rc == 1, out + err)
r = (json.loads(out) if out.strip() else {}).get("opcheck", [{}])[0]
cases = [c for c in r.get("carriers", [{}])[0].get("patterns", [{}])[0].get("cases", [])]
check("broken: failures name the field 'values'",
      r.get("failed", 0) > 0 and {c["field"] for c in cases if c["status"] == "failed"} == {"values"}, r)

# The text form: a summary line, the carrier, the pattern, the failing cases.
rc, out, err = run("--plugin", PLUGIN, "--operation", "cliplugin.broken")
check("text: exit 1", rc == 1, out + err)
check("text: summary line", out.startswith("opcheck cliplugin.broken: "), out)
check("text: the pattern", "pattern wrong_for_negatives (built-in, preference 0)" in out, out)
check("text: a failing case with its field", "failed" in out and "[values]" in out, out)

# A user-defined name beside a built-in one: one JSON object with both parts.
rc, out, err = run("--plugin", PLUGIN, "--operation", "cliplugin.double", "--operation", "relu",
                   "--carrier", "cpu", "--json")
obj = json.loads(out) if out.strip() else {}
check("mixed: exit 0", rc == 0, out + err)
check("mixed: conformance and opcheck in one object",
      [c["name"] for c in obj.get("carriers", [])] == ["CPU"] and len(obj.get("opcheck", [])) == 1, obj)

# Without the plugin the name is unknown (NotImplementedError, as before).
rc, out, err = run("--operation", "cliplugin.double", "--json")
check("no plugin: exit 1 NotImplementedError", rc == 1 and json.loads(out).get("error") == "NotImplementedError", out)

# A plugin that cannot be loaded: RuntimeError naming the path.
rc, out, err = run("--plugin", "/nonexistent/libnothing.so", "--operation", "relu", "--json")
e = json.loads(out) if out.strip() else {}
check("bad plugin: exit 1 RuntimeError naming it",
      rc == 1 and e.get("error") == "RuntimeError" and "/nonexistent/libnothing.so" in e.get("message", ""), out)

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
