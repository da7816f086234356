#!/usr/bin/env python3
"""The contract of `strideweave demo out-of-core` (docs/cli.md; issue 22
step 6, "A user sees it": a FileBacked-tier TiledEvictable four times larger
than its budget, reduce_sum and matmul with a progress bar, each checked
against an in-memory computation on a sample, printing bytes moved, prefetch
hits and the time beside the disk's direct-read time).

Runs the real binary (STRIDEWEAVE_BIN) on a small budget: the JSON report
(data at least four times the budget, every tile read once per pass, peak
resident bytes within the budget plus two tiles, both checks passed), the
text report with its progress bars, and usage errors (exit 2). Prints one
line per failed check and a closing 'N passed, N failed' line; exits
non-zero on any failure.
"""
import json
import os
import subprocess
import sys

BIN = os.environ.get("STRIDEWEAVE_BIN", "build/tools/strideweave")
HANG_BOUND_S = 10 * 60  # only a hung binary reaches it; not a timing requirement
passed = failed = 0


def run(*args):
    p = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=HANG_BOUND_S)
    return p.returncode, p.stdout, p.stderr


def check(name, condition, detail=""):
    global passed, failed
    if condition:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")


rc, out, err = run("demo", "out-of-core", "--budget-mib", "1", "--tile", "64", "--json")
r = json.loads(out) if rc == 0 else {}
check("json run", rc == 0 and r.get("checked") is True, (rc, out, err))
if r:
    check("data at least four times the budget", r["data_bytes"] >= 4 * r["budget_bytes"], r)
    for name in ("reduce_sum", "matmul"):
        check(f"{name} reads each tile once", r[name]["bytes_read"] == r["data_bytes"], r[name])
        check(f"{name} counts prefetches", r[name]["tiles_prefetched"] >= 1
              and r[name]["prefetch_hits"] + r[name]["stalls"] >= 1, r[name])
        check(f"{name} agrees on the sample", r[name]["worst_error_over_bound"] <= 1.0, r[name])
    check("peak within the budget plus two tiles",
          r["peak_resident_bytes"] <= r["budget_bytes"] + 2 * r["tile_bytes"], r)
    check("direct read timed", r["direct_read_seconds"] > 0, r)

rc, out, err = run("demo", "out-of-core", "--budget-mib", "1", "--tile", "64")
check("text run", rc == 0 and "checked: both results agree" in out and "direct read of the file" in out, (rc, out))
check("progress bars on stderr", "reduce_sum(x, axes=[1])" in err and "100%" in err, err)

for args in (("demo",), ("demo", "out-of-core", "--factor", "1"), ("demo", "out-of-core", "--budget-mib", "0"),
             ("demo", "elsewhere")):
    rc, out, err = run(*args)
    check(f"usage error {args}", rc == 2 and "usage error" in err, (rc, err))

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
