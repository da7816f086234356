#!/usr/bin/env python3
"""The contract of `strideweave run` (docs/cli.md).

Runs the real binary (STRIDEWEAVE_BIN): the documented example, literal
values that must round-trip (tricky floats, Int32 limits, bool, rank 0,
empty), CPU and Generic agreement, options, the accumulator, the error
objects, and `run --list --json`. Prints one line per failed check and a
closing 'N passed, N failed' line; exits non-zero on any failure.
"""
import json
import math
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


def run_json(*args):
    """(rc, parsed stdout or None, raw stdout) of `strideweave run ARGS --json`."""
    rc, out, _ = run("run", *args, "--json")
    try:
        return rc, json.loads(out), out
    except json.JSONDecodeError:
        return rc, None, out


def check(name, condition, detail=""):
    global passed, failed
    if condition:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")


def f32(x):
    """x rounded to the nearest float32 (as a Python float)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def same_float(a, b):
    """Bitwise float32 equality on decoded JSON values; 'nan'/'inf'/'-inf' are strings."""
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return isinstance(a, float) and struct.pack("<f", a) == struct.pack("<f", b)


# --- the documented example ---------------------------------------------------
rc, doc, out = run_json("add", "tensor:float32:[[1,2],[3,4]]", "tensor:float32:[[10,20],[30,40]]")
check("example exits 0", rc == 0, (rc, out))
check("example: one line", out.count("\n") == 1, out)
check("example: keys", doc is not None and sorted(doc) == ["plan", "result"], out)
if doc:
    check("example: plan", doc["plan"] == {
        "operation": "add",
        "operands": [{"role": "tensor", "dtype": "float32", "convert_to": "float32"},
                     {"role": "tensor", "dtype": "float32", "convert_to": "float32"}],
        "compute": "BINARY32", "accumulation": None, "accumulator_dtype": None, "output": "float32"}, doc["plan"])
    check("example: result", doc["result"] == {"dtype": "float32", "shape": [2, 2],
                                               "values": [[11.0, 22.0], [33.0, 44.0]]}, doc["result"])
    check("example: integral float32 prints with .0", '"values":[[11.0,22.0],[33.0,44.0]]' in out, out)

# Nesting: values[i][j] is element (i, j); a non-square shape catches a transposition.
rc, doc, out = run_json("relu", "tensor:float32:[[1,-2,3],[-4,5,-6]]")
check("nesting: shape (2,3)", rc == 0 and doc["result"]["shape"] == [2, 3], out)
check("nesting: values keep their coordinates",
      rc == 0 and doc["result"]["values"] == [[1.0, 0.0, 3.0], [0.0, 5.0, 0.0]], out)
rc, doc, out = run_json("reduce_sum", "tensor:float32:[[1,2,3],[10,20,30]]", "--option", "axes=[1]")
check("nesting: reduce over axis 1 sums the inner lists", rc == 0 and doc["result"]["values"] == [6.0, 60.0], out)
rc, doc, out = run_json("reduce_sum", "tensor:float32:[[1,2,3],[10,20,30]]", "--option", "axes=[0]")
check("nesting: reduce over axis 0 sums the columns", rc == 0 and doc["result"]["values"] == [11.0, 22.0, 33.0], out)
rc, doc, out = run_json("matmul", "tensor:float32:[[1,2,3],[4,5,6]]", "tensor:float32:[[1,0],[0,1],[1,1]]")
check("nesting: matmul (2,3)x(3,2)",
      rc == 0 and doc["result"] == {"dtype": "float32", "shape": [2, 2], "values": [[4.0, 5.0], [10.0, 11.0]]}, out)

# --- tricky floats round-trip -------------------------------------------------
# relu is the identity on positives and keeps -0.0, nan and inf (docs/numerics.md);
# mul by 1 is the identity for every float32 including -0.0 and -inf.
tricky = ["0.1", "1e-45", "3.4028235e38", "-0.0", "1.17549435e-38", "16777216", "0.3333333432674408",
          '"nan"', '"inf"', '"-inf"']
rc, doc, out = run_json("mul", "tensor:float32:[" + ",".join(tricky) + "]", "scalar:1")
check("tricky floats exit 0", rc == 0, out)
if doc:
    got = doc["result"]["values"]
    want = [f32(0.1), f32(1e-45), f32(3.4028235e38), -0.0, f32(1.17549435e-38), 16777216.0,
            f32(0.3333333432674408), "nan", "inf", "-inf"]
    check("tricky floats: count", len(got) == len(want), got)
    for g, w in zip(got, want):
        check(f"tricky float {w!r} round-trips", same_float(g, w), (g, w))
    check("0.1 prints as 0.1", '[0.1,' in out, out)
    check("1e-45 prints in shortest form", "1e-45" in out, out)
    check("-0.0 keeps its sign", "-0.0" in out and math.copysign(1.0, got[3]) == -1.0, out)
    check("float32 max prints in shortest form", "3.4028235e+38" in out, out)
    check("non-finite values are strings", '"nan","inf","-inf"' in out, out)
# What the command prints reads back unchanged (output -> input -> output).
if doc:
    again = run_json("mul", "tensor:float32:" + json.dumps(doc["result"]["values"]), "scalar:1")[1]
    check("printed values read back identically", again is not None and again["result"] == doc["result"], again)
# Bare nan/inf tokens are accepted as well as the strings.
rc, doc, out = run_json("mul", "tensor:float32:[nan,inf,-inf]", "scalar:1")
check("bare nan/inf/-inf", rc == 0 and doc["result"]["values"] == ["nan", "inf", "-inf"], out)
# A literal rounds once to the nearest float32.
rc, doc, out = run_json("relu", "tensor:float32:[1.00000005960464477539062500001, 3.4028235677973366e38]")
check("decimal rounds once to the nearest float32",
      rc == 0 and len(doc["result"]["values"]) == 2 and same_float(doc["result"]["values"][0], f32(1.0000001))
      and same_float(doc["result"]["values"][1], f32(3.4028235e38)), out)

# --- Int32 and Bool -------------------------------------------------------------
rc, doc, out = run_json("mul", "tensor:int32:[2147483647,-2147483648,0,-1]", "scalar:1")
check("int32 limits", rc == 0 and doc["result"] == {"dtype": "int32", "shape": [4],
                                                    "values": [2147483647, -2147483648, 0, -1]}, out)
check("int32 values are JSON integers", rc == 0 and "2147483647," in out and "." not in out.split('"result"')[1], out)
rc, doc, out = run_json("add", "tensor:int32:[[1,2],[3,4]]", "tensor:int32:[10,20]")
check("int32 add with broadcasting", rc == 0 and doc["result"]["values"] == [[11, 22], [13, 24]], out)
rc, doc, out = run_json("add", "tensor:int32:[1,2]", "tensor:float32:[0.5,0.25]")
check("int32 + float32 is float32", rc == 0 and doc["result"] == {"dtype": "float32", "shape": [2],
                                                                  "values": [1.5, 2.25]}, out)
# None of add/mul/elementwise_mul/relu/reduce_sum/matmul takes Bool: the tensor
# parses (no ValueError) and the operation refuses it with its typed error.
rc, doc, out = run_json("elementwise_mul", "tensor:bool:[[true,false],[false,true]]", "tensor:bool:[true,true]")
check("bool tensor parses; the operation refuses it",
      rc == 1 and doc is not None and doc.get("error") in ("NotImplementedError", "TypeError"), out)
# Operations added by others (comparisons, select) exercise Bool out and in when present.
listed = set()
rc, out, _ = run("run", "--list", "--json")
if rc == 0:
    listed = {o.get("name") for o in json.loads(out).get("operations", [])}
if "lt" in listed:
    rc, doc, out = run_json("lt", "tensor:float32:[[1,5],[3,3]]", "tensor:float32:[[2,4],[3,4]]")
    check("bool result values are true/false",
          rc == 0 and doc["result"] == {"dtype": "bool", "shape": [2, 2], "values": [[True, False], [False, True]]}
          and '"values":[[true,false],[false,true]]' in out, out)
if "select" in listed:
    rc, doc, out = run_json("select", "tensor:bool:[[true,false],[false,true]]", "tensor:float32:[[1,2],[3,4]]",
                            "tensor:float32:[[-1,-2],[-3,-4]]")
    check("bool tensor input keeps its coordinates", rc == 0 and doc["result"]["values"] == [[1.0, -2.0], [-3.0, 4.0]],
          out)
# Several results (sort, topk): "plan" and "result" are both lists.
if "sort" in listed:
    rc, doc, out = run_json("sort", "tensor:float32:[[3,1,2],[0,-1,5]]")
    check("several results: lists of plans and results",
          rc == 0 and isinstance(doc["plan"], list) and isinstance(doc["result"], list)
          and len(doc["result"]) >= 2 and doc["result"][0]["values"] == [[1.0, 2.0, 3.0], [-1.0, 0.0, 5.0]], out)

# --- rank 0 and empty -------------------------------------------------------------
rc, doc, out = run_json("relu", "tensor:float32:-2.5")
check("rank 0 in", rc == 0 and doc["result"] == {"dtype": "float32", "shape": [], "values": 0.0}, out)
rc, doc, out = run_json("mul", "tensor:float32:2.5", "scalar:2")
check("rank 0 bare number out", rc == 0 and doc["result"]["values"] == 5.0 and '"values":5.0' in out, out)
rc, doc, out = run_json("reduce_sum", "tensor:float32:[[1,2],[3,4]]")
check("full reduction is rank 0", rc == 0 and doc["result"] == {"dtype": "float32", "shape": [], "values": 10.0}, out)
rc, doc, out = run_json("relu", "tensor:float32:[]")
check("empty (0)", rc == 0 and doc["result"] == {"dtype": "float32", "shape": [0], "values": []}, out)
rc, doc, out = run_json("relu", "tensor:float32:[[],[]]")
check("empty (2,0)", rc == 0 and doc["result"] == {"dtype": "float32", "shape": [2, 0], "values": [[], []]}, out)
rc, doc, out = run_json("reduce_sum", "tensor:float32:[]")
check("sum of empty is 0", rc == 0 and doc["result"]["values"] == 0.0, out)

# --- both carriers give the same output --------------------------------------------
cases = [
    ["add", "tensor:float32:[[1.5,2],[3,-4]]", "tensor:float32:[0.25,-1e30]"],
    ["add", "tensor:int32:[1,2,3]", "tensor:int32:[[10],[20]]"],
    ["mul", "tensor:float32:[[0.1,0.2],[0.3,0.4]]", "scalar:3"],
    ["mul", "tensor:int32:[1,-2,3]", "scalar:-7"],
    ["mul", "tensor:float32:[1,2]", "tensor:float32:[[3],[4]]"],
    ["elementwise_mul", "tensor:float32:[0.1,0.2,\"inf\"]", "tensor:float32:[3,-0.0,2]"],
    # FLOATING: exactly only where every order gives the same sum (dyadic
    # terms); the order-sensitive case is checked under its rule below.
    ["reduce_sum", "tensor:float32:[[0.5,0.25,0.125],[8,1,-4]]"],
    ["reduce_sum", "tensor:int32:[[1,2,3],[4,5,6]]", "--option", "axes=[0]"],
    ["matmul", "tensor:float32:[[0.1,0.2],[0.3,0.4],[0.5,0.6]]", "tensor:float32:[[1,2,3],[4,5,6]]"],
    ["matmul", "tensor:int32:[[1,2],[3,4]]", "tensor:int32:[5,6]"],
    ["relu", "tensor:float32:[[-1,0.5],[\"nan\",-0.0]]"],
    ["relu", "tensor:int32:[-3,0,4]"],
]
for case in cases:
    rc_cpu, doc_cpu, out_cpu = run_json(*case, "--carrier", "cpu")
    rc_gen, doc_gen, out_gen = run_json(*case, "--carrier", "generic")
    check(f"carriers agree: {' '.join(case)}",
          doc_cpu is not None and rc_cpu == rc_gen and out_cpu == out_gen, (out_cpu, out_gen))
    check(f"default carrier is cpu: {case[0]}", run_json(*case)[2] == out_cpu, out_cpu)
# FLOATING reduce_sum leaves the order to the carrier (docs/numerics.md): with
# cancellation the carriers may differ, within 2 n eps sum|t| + ulp(result).
# Generic adds sequentially (0.1 + 1e8 + ... = 0); CPU's partial sums pair
# 1e8 with -1e8 first.
cancelling = ["reduce_sum", "tensor:float32:[[0.1,0.2,0.3],[1e8,1,-1e8]]"]
rc_cpu, doc_cpu, out_cpu = run_json(*cancelling, "--carrier", "cpu")
rc_gen, doc_gen, out_gen = run_json(*cancelling, "--carrier", "generic")
terms = [0.1, 0.2, 0.3, 1e8, 1, -1e8]
bound = 2 * len(terms) * 2.0 ** -24 * sum(abs(t) for t in terms) + 2.0 ** -23  # + ulp of a result in [1, 2)
check("FLOATING reduce_sum: carriers agree within the documented bound",
      rc_cpu == 0 and rc_gen == 0 and doc_cpu["plan"] == doc_gen["plan"]
      and abs(doc_cpu["result"]["values"] - doc_gen["result"]["values"]) <= bound, (out_cpu, out_gen))
rc, out, _ = run("run", "relu", "tensor:float32:[1]", "--carrier", "generic")
check("readable form names the carrier", rc == 0 and "Generic" in out and "plan:" in out and "result:" in out, out)
rc, out, _ = run("run", "relu", "tensor:float32:[1]")
check("readable form defaults to CPU", rc == 0 and "CPU float32 (1) [1.0]" in out, out)

# --- options and the accumulator -------------------------------------------------------
rc, doc, out = run_json("reduce_sum", "tensor:float32:[[1,2],[3,4]]", "--option", "axes=[1]",
                        "--option", "keepdims=true")
check("reduce_sum axes=[1] keepdims=true",
      rc == 0 and doc["result"] == {"dtype": "float32", "shape": [2, 1], "values": [[3.0], [7.0]]}, out)
rc, doc, out = run_json("reduce_sum", "tensor:float32:[[1,2],[3,4]]", "--option", "axes=-1")
check("a single integer axis", rc == 0 and doc["result"]["values"] == [3.0, 7.0], out)
rc, doc, out = run_json("reduce_sum", "tensor:float32:[[1,2],[3,4]]", "--option", "axes=null",
                        "--option", "keepdims=false")
check("axes=null reduces every axis", rc == 0 and doc["result"]["values"] == 10.0, out)
rc, doc, out = run_json("reduce_sum", "tensor:float32:[16777216, 1, 1]", "--accumulator", "float64")
check("--accumulator float64 plan",
      rc == 0 and doc["plan"]["accumulator_dtype"] == "float64" and doc["plan"]["accumulation"] is not None, out)
check("--accumulator float64 value", rc == 0 and doc["result"]["values"] == 16777218.0, out)
rc, doc, out = run_json("matmul", "tensor:float32:[[1,2]]", "tensor:float32:[[3],[4]]", "--accumulator", "float64")
check("matmul --accumulator float64",
      rc == 0 and doc["plan"]["accumulator_dtype"] == "float64" and doc["result"]["values"] == [[11.0]], out)
# --arithmetic binary32_fused (beyond the specification): the sum is
# -1.5 * 1 + 1.5 * (1 + 2**-23), in ascending k. 1.5 + 1.5 * 2**-23 is not a
# binary32 number; the strict plan rounds that product to 1.5 + 2**-22 before
# adding it to -1.5 (2**-22), the contracted plan adds the exact product to
# -1.5 (1.5 * 2**-23). Printed values are binary32 shortest forms: compare
# them rounded to binary32.
import struct
def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]
fused_args = ("matmul", "tensor:float32:[[-1.5, 1.5]]", "tensor:float32:[[1], [1.00000011920928955078125]]")
rc, doc, out = run_json(*fused_args)
check("matmul strict plan rounds the product",
      rc == 0 and doc["plan"]["compute"] == "BINARY32" and f32(doc["result"]["values"][0][0]) == 2.0 ** -22, out)
for carrier in ("cpu", "generic"):
    rc, doc, out = run_json(*fused_args, "--arithmetic", "binary32_fused", "--carrier", carrier)
    check(f"matmul --arithmetic binary32_fused on {carrier}",
          rc == 0 and doc["plan"]["compute"] == "BINARY32_FUSED" and f32(doc["result"]["values"][0][0]) == 1.5 * 2.0 ** -23, out)
rc, doc, out = run_json(*fused_args, "--arithmetic", "binary32")
check("matmul --arithmetic binary32 is the default plan",
      rc == 0 and doc["plan"]["compute"] == "BINARY32" and f32(doc["result"]["values"][0][0]) == 2.0 ** -22, out)

# --- errors ---------------------------------------------------------------------------
errors = [
    (["no_such_op", "tensor:float32:[1]"], "NotImplementedError"),
    (["add", "tensor:nope:[1]", "tensor:float32:[1]"], "LookupError"),
    (["add", "tensor:float64:[1]", "tensor:float32:[1]"], "ValueError"),
    (["add", "tensor:float32:[[1,2],[3]]", "tensor:float32:[1]"], "ValueError"),
    (["add", "tensor:float32:[[1,2],3]", "tensor:float32:[1]"], "ValueError"),
    (["add", "tensor:float32:[1,[2]]", "tensor:float32:[1]"], "ValueError"),
    (["relu", "tensor:float32:[\"one\"]"], "ValueError"),
    (["relu", "tensor:float32:[true]"], "ValueError"),
    (["relu", "tensor:float32:[1e39]"], "OverflowError"),
    (["relu", "tensor:int32:[2147483648]"], "OverflowError"),
    (["relu", "tensor:int32:[-2147483649]"], "OverflowError"),
    (["relu", "tensor:int32:[100000000000000000000000]"], "OverflowError"),
    (["relu", "tensor:int32:[1.5]"], "ValueError"),
    (["relu", "tensor:int32:[2.0]"], "ValueError"),
    (["relu", "tensor:int32:[true]"], "ValueError"),
    (["relu", "tensor:bool:[1]"], "ValueError"),
    (["relu", "tensor:bool:[\"true\"]"], "ValueError"),
    (["add", "tensor:float32:[1]", "tensor:float32:[1]", "--option", "foo=1"], "TypeError"),
    (["reduce_sum", "tensor:float32:[1]", "--option", "axes=[0.5]"], "TypeError"),
    (["reduce_sum", "tensor:float32:[1]", "--option", "axes=\"x\""], "TypeError"),
    (["reduce_sum", "tensor:float32:[1]", "--option", "keepdims=1"], "TypeError"),
    (["reduce_sum", "tensor:float32:[1]", "--option", "axes=[9223372036854775808]"], "OverflowError"),
    (["reduce_sum", "tensor:float32:[1,2]", "--option", "axes=[5]"], "ValueError"),
    (["mul", "tensor:int32:[1,2]", "scalar:2147483648"], "OverflowError"),
    (["add", "tensor:float32:[1]"], "TypeError"),
    (["add", "tensor:float32:[1,2]", "tensor:float32:[1,2,3]"], "ValueError"),
    (["add", "tensor:float32:[1]", "tensor:float32:[1]", "--accumulator", "float64"], "TypeError"),
    (["reduce_sum", "tensor:int32:[1]", "--accumulator", "float64"], "TypeError"),
    (["reduce_sum", "tensor:float32:[1]", "--accumulator", "nope"], "LookupError"),
    (["reduce_sum", "tensor:float32:[1]", "--arithmetic", "binary32_fused"], "TypeError"),
    (["add", "tensor:float32:[1]", "tensor:float32:[1]", "--arithmetic", "binary32_fused"], "TypeError"),
    (["matmul", "tensor:float32:[[1]]", "tensor:float32:[[1]]", "--arithmetic", "fused"], "ValueError"),
    (["matmul", "tensor:float32:[[1]]", "tensor:float32:[[1]]", "--arithmetic", "int32_exact"], "TypeError"),
    (["matmul", "tensor:int32:[[1]]", "tensor:int32:[[1]]", "--arithmetic", "binary32_fused"], "TypeError"),
    (["matmul", "tensor:float32:[[1]]", "tensor:float32:[[1]]", "--arithmetic", "binary32_fused",
      "--accumulator", "float64"], "TypeError"),
]
for args, expected in errors:
    rc, doc, out = run_json(*args)
    check(f"error {' '.join(args)} -> {expected}",
          rc == 1 and isinstance(doc, dict) and doc.get("error") == expected and doc.get("message")
          and sorted(doc) == ["error", "message"], (rc, out))
rc, out, err = run("run", "no_such_op", "tensor:float32:[1]")
check("error without --json goes to stderr", rc == 1 and out == "" and "NotImplementedError" in err, (out, err))

# Usage errors exit 2: one line on stderr, nothing on stdout.
for args in (["run"], ["run", "add", "--carrier", "gpu"], ["run", "add", "--carrier"],
             ["run", "add", "--option", "novalue"], ["run", "add", "--option", "=1"], ["run", "add", "--bogus"],
             ["run", "reduce_sum", "tensor:float32:[1]", "--option", "axes=[0]", "--option", "axes=[0]"],
             ["run", "add", "--list"], ["run", "--list", "--option", "axes=[0]"],
             ["run", "--list", "--accumulator", "float64"]):
    rc, out, err = run(*args, "--json")
    check(f"usage {' '.join(args)} exits 2", rc == 2 and out == "" and err.count("\n") == 1 and "usage" in err,
          (rc, out, err))

# --- the literal grammar of VALUES and --option (docs/cli.md, "Literals") ---------------
# The numbers of tensor:DTYPE:VALUES and --option NAME=JSON follow the one
# grammar of scalar:LITERAL (tests/cli/test_cli.py checks the scalars): text
# outside it is a usage error (exit 2) before anything runs; a well-formed
# value that does not fit is an OverflowError; a kind mismatch a ValueError.
syntax_errors = [
    ["relu", "tensor:float32:[1,2"], ["relu", "tensor:float32"], ["relu", "tensor:float32:"],
    ["relu", "tensor::[1]"], ["relu", "float32:[1]"], ["relu", "dtype:float32"],
    ["relu", "tensor:float32:[0x10]"], ["relu", "tensor:float32:[+1]"], ["relu", "tensor:float32:[01]"],
    ["relu", "tensor:float32:[1.]"], ["relu", "tensor:float32:[.5]"], ["relu", "tensor:float32:[NaN]"],
    ["relu", "tensor:float32:[infinity]"], ["relu", "tensor:float32:[1e]"], ["relu", "tensor:int32:[0x10]"],
    ["relu", "tensor:bool:[True]"], ["relu", "tensor:float32:[1]x"],
    ["reduce_sum", "tensor:float32:[1]", "--option", "axes=[1"], ["reduce_sum", "tensor:float32:[1]", "--option", "axes=0x1"],
    ["reduce_sum", "tensor:float32:[1]", "--option", "axes=[+0]"], ["reduce_sum", "tensor:float32:[1]", "--option", "axes="],
    ["mul", "tensor:float32:[1]", "scalar:abc"], ["mul", "tensor:float32:[1]", "scalar:0x10"],
    # A usage error wins over the library's errors elsewhere on the line.
    ["no_such_op", "tensor:nope:[1]", "scalar:0x10"], ["relu", "tensor:float32:[1e400]", "tensor:float32:[1,"],
]
for args in syntax_errors:
    rc, out, err = run("run", *args, "--json")
    check(f"run {' '.join(args)} is a usage error",
          rc == 2 and out == "" and err.count("\n") == 1 and "usage error" in err, (rc, out, err))
value_errors = [
    (["relu", "tensor:float32:[1e400]"], "OverflowError"),
    (["relu", "tensor:float32:[-3.5e38]"], "OverflowError"),
    (["relu", "tensor:float32:[1" + "0" * 40 + "]"], "OverflowError"),
    (["relu", "tensor:int32:[9223372036854775808]"], "OverflowError"),
    (["relu", "tensor:int32:[1e2]"], "ValueError"),
    (["reduce_sum", "tensor:float32:[1]", "--option", "keepdims=1e400"], "OverflowError"),
    (["reduce_sum", "tensor:float32:[1]", "--option", "axes=9223372036854775808"], "OverflowError"),
    (["mul", "tensor:float32:[1]", "scalar:1e400"], "OverflowError"),
]
for args, expected in value_errors:
    rc, doc, out = run_json(*args)
    check(f"run {' '.join(args)[:60]} -> {expected}", rc == 1 and isinstance(doc, dict) and doc.get("error") == expected,
          (rc, out))
# Rounded once to float32: underflow gives a subnormal or a zero of the literal's sign.
rc, doc, out = run_json("mul", "tensor:float32:[1e-50,-1e-50,0.7e-45,-0.71e-45,1e-45,3.4028235677973366e38]", "scalar:1")
check("float32 elements underflow to signed zeros and subnormals",
      rc == 0 and [struct.pack("<f", v) for v in doc["result"]["values"]]
      == [struct.pack("<f", v) for v in (0.0, -0.0, 0.0, -f32(1e-45), f32(1e-45), f32(3.4028235e38))], out)
rc, doc, out = run_json("relu", "tensor:float32:[ 1 , [2] ]")
check("a ragged list with blanks is a ValueError, not a syntax error", rc == 1 and doc.get("error") == "ValueError", out)  # ragged, not syntax
rc, doc, out = run_json("relu", "tensor:float32:[ [ 1 , 2 ] ]")
check("blanks between JSON tokens are accepted", rc == 0 and doc["result"]["values"] == [[1.0, 2.0]], out)
rc, doc, out = run_json("mul", "tensor:int32:[-0, 0]", "scalar:1")
check("int32 -0 is 0", rc == 0 and doc["result"]["values"] == [0, 0], out)

# --- run --list --json --------------------------------------------------------------
rc, out, _ = run("run", "--list", "--json")
check("--list exits 0", rc == 0, rc)
listing = json.loads(out) if rc == 0 else {"operations": []}
ops = listing.get("operations", [])
check("--list: one key", list(listing) == ["operations"], list(listing))
names = [o.get("name") for o in ops]
check("--list: sorted and unique names", names == sorted(set(names)), names)
for name in ("add", "elementwise_mul", "mul", "relu", "reduce_sum", "matmul"):
    check(f"--list names {name}", name in names, names)
for o in ops:
    check(f"--list entry keys {o.get('name')}", sorted(o) == ["accumulator", "arithmetic", "name", "options", "signature"], o)
    check(f"--list name {o.get('name')}", isinstance(o.get("name"), str) and o["name"], o)
    check(f"--list signature {o.get('name')}",
          isinstance(o.get("signature"), str) and o["signature"].startswith(o.get("name", "") + "("), o)
    check(f"--list accumulator {o.get('name')}", isinstance(o.get("accumulator"), bool), o)
    check(f"--list arithmetic {o.get('name')}", o.get("arithmetic") is (o.get("name") == "matmul"), o)
    opts = o.get("options")
    check(f"--list options {o.get('name')}", isinstance(opts, list), o)
    for opt in opts or []:
        check(f"--list option {o.get('name')}.{opt.get('name')}",
              sorted(opt) == ["default", "meaning", "name"] and all(isinstance(opt[k], str) and opt[k] for k in opt), opt)
    # Every listed name is callable: an unknown option is a TypeError, never NotImplementedError.
    rc, doc, out = run_json(o["name"], "--option", "__no_such_option__=1")
    check(f"--list {o['name']} is callable by run",
          rc == 1 and isinstance(doc, dict) and doc.get("error") not in (None, "NotImplementedError"), out)
byname = {o["name"]: o for o in ops}
if "reduce_sum" in byname:
    check("reduce_sum accepts an accumulator", byname["reduce_sum"]["accumulator"] is True, byname["reduce_sum"])
    check("reduce_sum lists axes and keepdims",
          {x["name"] for x in byname["reduce_sum"]["options"]} >= {"axes", "keepdims"}, byname["reduce_sum"])
if "add" in byname:
    check("add takes no accumulator and no options",
          byname["add"]["accumulator"] is False and byname["add"]["options"] == [], byname["add"])
rc, out, _ = run("run", "--list")
check("--list readable", rc == 0 and "reduce_sum(" in out and "operations" in out, out[:200])

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
