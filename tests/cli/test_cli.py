#!/usr/bin/env python3
"""The command-line contract of `strideweave` (issue: foundation, item 5).

Runs the real binary (STRIDEWEAVE_BIN) and checks `plans --json`, `resolve`
for every plan of the registry, the documented error objects, and the tour.
Prints one line per check and a closing 'N passed, N failed' line; exits
non-zero on any failure.
"""
import json
import os
import struct
import subprocess
import sys

BIN = os.environ.get("STRIDEWEAVE_BIN", "build/tools/strideweave")
passed = failed = 0


# A bound that only a hung binary reaches: no machine, however slow, and no
# sanitizer build takes half an hour for one command. It is not a timing
# requirement (the contract has none).
HANG_BOUND_S = 30 * 60


def run(*args):
    p = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=HANG_BOUND_S)
    return p.returncode, p.stdout, p.stderr


def f32(x):
    """x rounded to the nearest float32 (as a Python float)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def check(name, condition, detail=""):
    global passed, failed
    if condition:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")


# --- plans --json ---------------------------------------------------------
rc, out, _ = run("plans", "--json")
check("plans exits 0", rc == 0, rc)
doc = json.loads(out)
plans = doc["plans"]
check("plans: 101 default plans", len(plans) == 101, len(plans))
check("plans: deterministic", json.loads(run("plans", "--json")[1]) == doc)
check("plans: registry order starts with internal names", plans[0]["operation"] == "_sort_indices", plans[0])
keys = ["operation", "operands", "compute", "accumulation", "accumulator_dtype", "output"]
for p in plans:
    check("plan keys", list(p.keys()) == keys or sorted(p.keys()) == sorted(keys), p)
    for o in p["operands"]:
        check("operand keys", sorted(o.keys()) == ["convert_to", "dtype", "role"], o)
        check("operand role", o["role"] in ("tensor", "weak_scalar"), o)
        check("weak scalar has null dtype", (o["role"] == "weak_scalar") == (o["dtype"] is None), o)
    check("compute by member name", p["compute"] in ("BINARY32", "INT32_EXACT_CHECKED", "INT32_EXACT"), p)
names = sorted({p["operation"] for p in plans})
check("plans cover every registered name but select", len(names) == 55, len(names))

# --- resolve reproduces every plan ----------------------------------------
probes = ["3", "-1", "0.5"]
for p in plans:
    found = False
    candidates = [[]]
    for o in p["operands"]:
        opts = [f"dtype:{o['dtype']}"] if o["role"] == "tensor" else [f"scalar:{s}" for s in probes]
        candidates = [c + [x] for c in candidates for x in opts]
    extra = ["--accumulator", p["accumulator_dtype"]] if p["accumulation"] == "FLOATING" else []
    for c in candidates:
        rc, out, _ = run("resolve", p["operation"], *c, *extra, "--json")
        if rc == 0 and json.loads(out) == p:
            found = True
            break
    check(f"resolve reproduces {p['operation']}", found, p)

# The documented example shape of a printed plan.
rc, out, _ = run("resolve", "mul", "dtype:float32", "scalar:2", "--json")
check("resolve mul example", rc == 0 and json.loads(out) == {
    "operation": "mul",
    "operands": [{"role": "tensor", "dtype": "float32", "convert_to": "float32"},
                 {"role": "weak_scalar", "dtype": None, "convert_to": "float32"}],
    "compute": "BINARY32", "accumulation": None, "accumulator_dtype": None, "output": "float32"}, out)
rc, out, _ = run("resolve", "select", "dtype:bool", "dtype:float32", "dtype:float32", "--json")
check("resolve select with a Bool condition", rc == 0 and json.loads(out)["output"] == "float32", out)
rc, out, _ = run("resolve", "pow", "dtype:int32", "scalar:2147483647", "--json")
check("pow int32 by 2**31-1 stays exact", rc == 0 and json.loads(out)["compute"] == "INT32_EXACT_CHECKED", out)
rc, out, _ = run("resolve", "mul", "dtype:int32", "scalar:true", "--json")
check("mul int32 by true is Float32", rc == 0 and json.loads(out)["output"] == "float32", out)

# --- errors ---------------------------------------------------------------
errors = [
    (["resolve", "no_such_op", "dtype:float32"], "NotImplementedError"),
    (["resolve", "add", "dtype:floating", "dtype:float32"], "TypeError"),
    (["resolve", "add", "dtype:float64", "dtype:float32"], "NotImplementedError"),
    (["resolve", "add", "dtype:bool", "dtype:float32"], "NotImplementedError"),
    (["resolve", "neg", "dtype:int32"], "TypeError"),
    (["resolve", "select", "dtype:float32", "dtype:float32", "dtype:float32"], "TypeError"),
    (["resolve", "add", "dtype:float32"], "TypeError"),
    (["resolve", "add", "dtype:float32", "scalar:1"], "TypeError"),
    (["resolve", "mul", "dtype:int32", "scalar:2147483648"], "OverflowError"),
    (["resolve", "reduce_sum", "dtype:int32", "--accumulator", "float64"], "TypeError"),
    (["resolve", "add", "dtype:float32", "dtype:float32", "--accumulator", "float64"], "TypeError"),
    (["resolve", "matmul", "dtype:float32", "dtype:float32", "--accumulator", "int32"], "NotImplementedError"),
    (["resolve", "add", "dtype:nope", "dtype:float32"], "LookupError"),
]
for args, expected in errors:
    rc, out, _ = run(*args, "--json")
    try:
        obj = json.loads(out)
    except json.JSONDecodeError:
        obj = {}
    check(f"error {' '.join(args)}", rc != 0 and obj.get("error") == expected and obj.get("message"), (rc, out))

# --- the scalar grammar (docs/cli.md, "Literals"; issue 10, item 15) ----------
# One rule: a JSON number (an integer without fraction or exponent, else a
# real), true/false, nan/inf/-inf; no blanks, no '+', no leading zeros, no hex.
# Text outside it is a usage error (exit 2); a well-formed value that does not
# fit (an integer beyond int64, a real beyond the largest double) is the
# library's OverflowError (exit 1); a real below the smallest subnormal rounds
# to a zero of its sign.
def scalar_kind(literal):
    """'integer' or 'real' as `resolve` sees the weak scalar, or (rc, out, err)."""
    rc, out, err = run("resolve", "mul", "dtype:int32", f"scalar:{literal}", "--json")
    if rc == 1 and json.loads(out)["error"] == "OverflowError" and "Int32 range" in out:
        return "integer"  # the Int32 plan was chosen and refused the value; a real picks Float32
    if rc != 0:
        return (rc, out, err)
    return {"int32": "integer", "float32": "real"}.get(json.loads(out)["output"], out)


def scalar_value(literal):
    """The weak scalar times float32 1, as printed by `run` (a float32 in JSON)."""
    rc, out, err = run("run", "mul", "tensor:float32:[1]", f"scalar:{literal}", "--json")
    return json.loads(out)["result"]["values"][0] if rc == 0 else (rc, out, err)


accepted = [
    # (literal, kind, value of float32 1 times the weak scalar)
    ("5", "integer", 5.0), ("-5", "integer", -5.0), ("0", "integer", 0.0), ("-0", "integer", 0.0),
    ("9223372036854775807", "integer", 9223372036854775807.0),
    ("-9223372036854775808", "integer", -9223372036854775808.0),
    ("0.5", "real", 0.5), ("-0.0", "real", -0.0), ("2.5e-1", "real", 0.25),
    ("1e3", "real", 1000.0), ("1E3", "real", 1000.0), ("1e+3", "real", 1000.0), ("1e-3", "real", f32(1e-3)),
    ("1e-400", "real", 0.0), ("-1e-400", "real", -0.0),
    ("nan", "real", "nan"), ("inf", "real", "inf"), ("-inf", "real", "-inf"),
    ("true", "real", 1.0), ("false", "real", 0.0),
]
for literal, kind, value in accepted:
    check(f"scalar:{literal} is a weak {kind}", scalar_kind(literal) == kind, scalar_kind(literal))
    got = scalar_value(literal)
    same = got == value if isinstance(value, str) else (
        isinstance(got, float) and struct.pack("<f", got) == struct.pack("<f", value))  # bitwise, so -0.0 != 0.0
    check(f"scalar:{literal} has the value {value!r}", same, got)
refused = ["0x10", " 5", "5 ", "\t5", "", "+5", "05", "00", "1.", ".5", "1e", "1e+", "1.5.2", "1_000", "1,5", "- 5",
           "--5", "abc", "True", "False", "NaN", "Inf", "-Inf", "+inf", "infinity", "nan(1)", "null", "[1]", '"nan"',
           "'5'", "0b1", "1e5x", "5f"]
for literal in refused:
    for sub in (["resolve", "mul", "dtype:float32"], ["run", "mul", "tensor:float32:[1]"]):
        rc, out, err = run(*sub, f"scalar:{literal}", "--json")
        check(f"{sub[0]} scalar:{literal!r} is a usage error",
              rc == 2 and out == "" and err.count("\n") == 1 and f"'scalar:{literal}' is not a scalar literal" in err,
              (rc, out, err))
too_large = ["1e400", "-1e400", "1.8e308", "9223372036854775808", "-9223372036854775809", "1" + "0" * 400,
             "1e99999999999999999999"]
for literal in too_large:
    for sub in (["resolve", "mul", "dtype:float32"], ["run", "mul", "tensor:float32:[1]"]):
        rc, out, err = run(*sub, f"scalar:{literal}", "--json")
        obj = json.loads(out) if rc == 1 else {}
        check(f"{sub[0]} scalar:{literal[:30]} is an OverflowError",
              rc == 1 and obj.get("error") == "OverflowError" and literal[:20] in obj.get("message", ""), (rc, out, err))
# The largest finite double and the smallest subnormal are in range.
check("scalar:1.7976931348623157e308 is accepted", scalar_kind("1.7976931348623157e308") == "real")
check("scalar:1e-99999999999999999999 rounds to zero", scalar_value("1e-99999999999999999999") == 0.0)
# A usage error wins over the library's errors on the same line.
rc, out, err = run("resolve", "no_such_op", "scalar:1e400", "scalar:0x10", "--json")
check("a bad literal is reported before anything is looked up", rc == 2 and out == "" and "0x10" in err, (rc, out, err))
for args in (["resolve", "add", "dtype:float32", "scalar"], ["resolve", "add", "dtype:", "scalar:1"],
             ["resolve", "add", "float32", "scalar:1"], ["resolve", "add", "tensor:float32:[1]", "scalar:1"]):
    rc, out, err = run(*args, "--json")
    check(f"{' '.join(args)} is a usage error", rc == 2 and out == "" and err.count("\n") == 1, (rc, out, err))

# --- caps and check ---------------------------------------------------------
rc, out, _ = run("caps", "--json")
caps = json.loads(out)
check("caps exits 0", rc == 0, rc)
names = [c["name"] for c in caps["carriers"]]
check("caps lists Generic and CPU", names == ["Generic", "CPU"], names)
axes_keys = ["accumulation", "borrowed_input", "caller_output", "owned_result", "strided_output"]
for carrier in caps["carriers"]:
    check(f"caps {carrier['name']} has entries", len(carrier["capabilities"]) > 100, len(carrier["capabilities"]))
    for c in carrier["capabilities"]:
        check("capability axes", sorted(c["axes"].keys()) == axes_keys, c)
        check("capability levels", all(v in ("Unsupported", "FallbackCopy", "Native") for v in c["axes"].values()), c)
        plan = {k: v for k, v in c.items() if k != "axes"}
        check("capability is a plan object", sorted(plan.keys()) == sorted(keys), c)
rc, out, _ = run("caps", "--carrier", "cpu", "--json")
check("caps --carrier cpu", rc == 0 and [c["name"] for c in json.loads(out)["carriers"]] == ["CPU"], out[:100])
rc, out, _ = run("caps", "--carrier", "cpu")
check("caps markdown", rc == 0 and out.startswith("## CPU") and "| operation |" in out, out[:100])
rc, out, _ = run("caps", "--carrier", "nope", "--json")
check("caps unknown carrier", rc != 0 and json.loads(out)["error"] == "ValueError", out)
# `check` on a small case set (--operation): the whole harness runs in the
# GoogleTest suite (Conformance.*, AutogradGradientCheck.*); here the command's
# contract, quick under any build.
cpu_caps = next(c["capabilities"] for c in caps["carriers"] if c["name"] == "CPU")
quick = ["relu", "lt"]
rc, out, _ = run("check", "--carrier", "cpu", *[a for op in quick for a in ("--operation", op)], "--json")
rep = json.loads(out) if rc == 0 else {"carriers": [{}]}
got = rep["carriers"][0]
check("check --operation: one carrier, the documented keys",
      len(rep["carriers"]) == 1 and list(got) == ["name", "entries", "cases", "passed", "failed"], out)
check("check --operation passes", rc == 0 and got.get("name") == "CPU" and got.get("failed") == 0
      and got.get("passed") == got.get("cases") > 0, out)
check("check --operation runs exactly the entries of those operations",
      got.get("entries") == sum(1 for c in cpu_caps if c["operation"] in quick), (got, len(cpu_caps)))
rc, out, _ = run("check", "--operation", "relu", "--json")
check("check --operation on every carrier", rc == 0 and [c["name"] for c in json.loads(out)["carriers"]] == ["Generic", "CPU"], out)
rc, out, _ = run("check", "--carrier", "cpu", "--operation", "relu")
check("check --operation table", rc == 0 and out.startswith("carrier ") and "\nCPU " in out, out)
rc, out, _ = run("check", "--operation", "no_such_op", "--json")
check("check --operation of an unknown name", rc == 1 and json.loads(out)["error"] == "NotImplementedError", out)
rc, out, _ = run("check", "--gradients", "--operation", "relu", "--operation", "matmul", "--json")
rep = json.loads(out) if rc == 0 else {"gradients": []}
check("check --gradients --operation passes", rc == 0 and [g["carrier"] for g in rep["gradients"]] == ["Generic", "CPU"]
      and all(g["failed"] == 0 and g["checked"] == g["operations"] == 2 for g in rep["gradients"]), out)
rc, out, _ = run("check", "--gradients", "--carrier", "cpu", "--operation", "relu", "--operation", "relu", "--json")
check("check --gradients counts an operation given twice once",
      rc == 0 and json.loads(out)["gradients"] == [{"carrier": "CPU", "operations": 1, "checked": 1, "failed": 0}], out)
rc, out, _ = run("check", "--gradients", "--operation", "no_such_op", "--json")
check("check --gradients --operation of an unknown name",
      rc == 1 and json.loads(out)["error"] == "NotImplementedError", out)

# --- --help and usage errors (issue 10, items 10 and 15) ----------------------
# CLI11 generates every --help: it exits 0, prints the usage on stdout and
# nothing on stderr. A usage error exits 2 with one line on stderr that names
# the problem, and prints nothing on stdout (not even with --json).
SUBCOMMANDS = ["tour", "plans", "resolve", "run", "caps", "check", "inspect", "convert"]
rc, out, err = run("--help")
check("--help exits 0", rc == 0 and err == "", (rc, err))
check("--help shows the usage", out.startswith("strideweave ") and "Usage: strideweave" in out, out[:200])
check("--help lists every subcommand", all(f"\n  {s} " in out for s in SUBCOMMANDS), out)
check("--help names the exit codes", "Exit codes: 0" in out and "2 a usage error" in out, out)
check("-h is --help", run("-h") == (rc, out, err))
for sub in SUBCOMMANDS:
    for flag in ("--help", "-h"):
        rc, out, err = run(sub, flag)
        check(f"{sub} {flag} exits 0 with its usage",
              rc == 0 and err == "" and f"Usage: strideweave {sub} [OPTIONS]" in out, (rc, out[:200], err))
    rc, out, err = run(sub, "--help")
    check(f"{sub} --help ends with a newline and no trailing blanks",
          out.endswith("\n") and all(line == line.rstrip() for line in out.splitlines()), out)
rc, out, err = run("run", "--help")
for flag in ("--carrier", "--option NAME=JSON", "--accumulator DTYPE", "--arithmetic NAME", "--json", "--list"):
    check(f"run --help documents {flag}", flag in out, out)
check("run --help names the carriers", "{generic,cpu}" in out, out)
rc, out, err = run("check", "--help")
check("check --help documents --gradients", "--gradients" in out, out)
rc, out, err = run("--version")
check("--version exits 0", rc == 0 and out.startswith("strideweave ") and err == "", (rc, out, err))
# --help wins over everything else on the line, including a bad literal.
rc, out, err = run("run", "add", "--bogus", "--help")
check("--help with other arguments still exits 0", rc == 0 and "Usage: strideweave run" in out, (rc, out[:100], err))

usage_errors = [
    # (arguments, a word the one-line message must contain)
    (["nope"], "nope"),
    (["--bogus"], "--bogus"),
    (["tour", "extra"], "extra"),
    (["plans", "--bogus"], "--bogus"),
    (["plans", "extra"], "extra"),
    (["resolve"], "OPERATION"),
    (["resolve", "add", "dtype:float32", "dtype:float32", "--bogus"], "--bogus"),
    (["resolve", "reduce_sum", "dtype:float32", "--accumulator"], "--accumulator"),
    (["resolve", "matmul", "dtype:float32", "dtype:float32", "--arithmetic"], "--arithmetic"),
    (["run", "add", "--accumulator"], "--accumulator"),
    (["caps", "--bogus"], "--bogus"),
    (["caps", "--carrier"], "--carrier"),
    (["caps", "--render-docs"], "--render-docs"),
    (["caps", "--render-docs", "FILE", "--json"], "--render-docs"),
    (["caps", "--render-docs", "FILE", "--carrier", "cpu"], "--render-docs"),
    (["caps", "extra"], "extra"),
    (["check", "--bogus"], "--bogus"),
    (["check", "--carrier"], "--carrier"),
    (["check", "--carrier", "cpu", "--carrier", "generic"], "--carrier"),
    (["check", "--gradients", "--bogus"], "--bogus"),
    (["check", "--operation"], "--operation"),
]
for args, word in usage_errors:
    for extra in ([], ["--json"]):
        rc, out, err = run(*args, *extra)
        check(f"usage error {' '.join(args + extra)} exits 2 with one line naming {word}",
              rc == 2 and out == "" and err.count("\n") == 1 and err.startswith("strideweave")
              and "usage error" in err and word in err, (rc, out, err))

# --- the tour ---------------------------------------------------------------
rc, out, err = run()
check("tour exits 0", rc == 0, rc)
check("tour writes nothing on stderr", err == "", err)
check("tour names the carriers", "Generic" in out and "CPU" in out, out[:200])
check("tour prints plans", "compute=BINARY32" in out, out[:200])
check("strideweave tour is the default", run("tour") == (rc, out, err))
check("tour: no trailing blanks, ends with one newline",
      out.endswith("\n") and not out.endswith("\n\n") and all(l == l.rstrip() for l in out.splitlines()), out)
check("tour points at --help", "strideweave --help" in out, out[-200:])
# Each step prints what `strideweave run` prints for the same call: the same
# plan text and the same result text (tensors nested, outer list = axis 0).
a, b = "tensor:float32:[[1,3,5],[2,4,6]]", "tensor:int32:[[10,20,30]]"
tour_steps = {
    "add(a, b)": ["add", a, b],
    "mul(b, 2)": ["mul", b, "scalar:2"],
    "mul(b, 0.5)": ["mul", b, "scalar:0.5"],
    "relu(a + (-3.5))": ["relu", "tensor:float32:[[-2.5,-0.5,1.5],[-1.5,0.5,2.5]]"],
    "reduce_sum(a, axes=[1])": ["reduce_sum", a, "--option", "axes=[1]"],
    "reduce_sum(a) with the Float64 accumulator": ["reduce_sum", a, "--accumulator", "float64"],
    "matmul(a, permute(a))": ["matmul", a, "tensor:float32:[[1,2],[3,4],[5,6]]"],
    "matmul(a, permute(a)) contracted on request (beyond the specification)":
        ["matmul", a, "tensor:float32:[[1,2],[3,4],[5,6]]", "--arithmetic", "binary32_fused"],
}
lines = out.splitlines()
check("tour shows a and b as run reads them", "a = CPU float32 (2,3) [[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]" in out
      and "b = CPU int32 (1,3) [[10, 20, 30]]" in out, out)
for label, args in tour_steps.items():
    at = next((i for i, l in enumerate(lines) if l.split("  #")[0] == label), None)  # "label  # comment"
    rc, run_out, _ = run("run", *args)
    check(f"tour step {label} matches strideweave run",
          at is not None and rc == 0 and [l.strip() for l in lines[at + 1:at + 3]] == run_out.splitlines(),
          (lines[at + 1:at + 3] if at is not None else None, run_out))

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
