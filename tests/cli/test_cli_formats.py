#!/usr/bin/env python3
"""The contract of `strideweave inspect` and `strideweave convert` (docs/cli.md;
issue 13 items 4 and 7: "`strideweave inspect FILE` prints the header (dtype,
shape, offsets) of a .npy or safetensors file, --json too"; "the command line
shows a progress bar").

Runs the real binary (STRIDEWEAVE_BIN) on files numpy writes and on a
safetensors file built byte by byte: the JSON and text headers, a bad header
and a missing file (exit 1 with the typed error), usage errors (exit 2), and
convert's round trip through both formats with its progress bar. Prints one
line per failed check and a closing 'N passed, N failed' line; exits
non-zero on any failure.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

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


def safetensors_bytes(entries, data, metadata=None):
    header = dict({"__metadata__": metadata} if metadata else {}, **entries)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


with tempfile.TemporaryDirectory() as tmp:
    npy = os.path.join(tmp, "a.npy")
    np.save(npy, np.arange(6, dtype=np.float32).reshape(2, 3))

    # inspect --json of a .npy file: dtype, shape, byte range.
    rc, out, err = run("inspect", npy, "--json")
    check("inspect npy exits 0", rc == 0, err)
    h = json.loads(out) if rc == 0 else {}
    check("npy format and version", h.get("format") == "npy" and h.get("version") == "1.0", h)
    t = (h.get("tensors") or [{}])[0]
    check("npy dtype and shape", t.get("dtype") == "float32" and t.get("file_dtype") == "<f4" and t.get("shape") == [2, 3], t)
    size = os.path.getsize(npy)
    check("npy byte range is the data", t.get("data_offset") == h.get("header_bytes") and t.get("data_end") == size
          and t.get("data_bytes") == 24 and h.get("file_bytes") == size, h)
    check("npy order", t.get("order") == "C", t)

    # A hand-built safetensors file: per-tensor offsets, metadata.
    st = os.path.join(tmp, "m.safetensors")
    with open(st, "wb") as f:
        f.write(safetensors_bytes({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
                                   "b": {"dtype": "I32", "shape": [2], "data_offsets": [16, 24]}},
                                  struct.pack("<4f2i", 1, 2, 3, 4, 5, 6), metadata={"format": "pt"}))
    rc, out, err = run("inspect", st, "--json")
    h = json.loads(out) if rc == 0 else {}
    check("inspect safetensors exits 0", rc == 0, err)
    names = [t.get("name") for t in h.get("tensors", [])]
    check("tensors by offset", names == ["w", "b"], names)
    start = h.get("header_bytes", 0)
    check("per-tensor byte ranges", [(t["data_offset"], t["data_end"]) for t in h.get("tensors", [])] ==
          [(start, start + 16), (start + 16, start + 24)], h)
    check("metadata", h.get("metadata") == {"format": "pt"}, h)

    # The text form names dtype, shape and bytes.
    rc, out, err = run("inspect", st)
    check("text inspect", rc == 0 and "safetensors, 2 tensors" in out and "int32 (I32) shape [2]" in out
          and f"bytes [{start + 16}, {start + 24})" in out, out)

    # Library errors: exit 1 with the typed message.
    bad = os.path.join(tmp, "bad.npy")
    with open(bad, "wb") as f:
        f.write(b"\x93NUMPX\x01\x00junk")
    rc, out, err = run("inspect", bad, "--json")
    e = json.loads(out) if out.strip() else {}
    check("bad magic: exit 1, ValueError", rc == 1 and e.get("error") == "ValueError" and "wrong magic" in e.get("message", ""), (rc, out))
    rc, out, err = run("inspect", bad)
    check("bad magic text: stderr line", rc == 1 and out == "" and err.startswith("strideweave: ValueError:"), (rc, out, err))
    rc, out, err = run("inspect", os.path.join(tmp, "missing.npy"), "--json")
    e = json.loads(out) if out.strip() else {}
    check("missing file: exit 1, OSError", rc == 1 and e.get("error") == "OSError", (rc, out))
    np.save(os.path.join(tmp, "f8.npy"), np.zeros(2))
    rc, out, err = run("inspect", os.path.join(tmp, "f8.npy"), "--json")
    e = json.loads(out) if out.strip() else {}
    check("unsupported dtype named", rc == 1 and "'<f8'" in e.get("message", ""), (rc, out))

    # Usage errors: exit 2, nothing on stdout.
    for args in (["inspect"], ["inspect", npy, "extra"], ["convert", npy], ["convert", npy, "x", "--to", "csv"]):
        rc, out, err = run(*args)
        check(f"usage error {args}", rc == 2 and out == "" and "usage error" in err, (rc, out, err))

    # convert: .npy -> safetensors -> .npy, with the progress bar.
    st2 = os.path.join(tmp, "c.safetensors")
    rc, out, err = run("convert", npy, st2, "--name", "weight", "--progress-threshold", "0", "--json")
    h = json.loads(out) if rc == 0 else {}
    check("convert to safetensors", rc == 0 and [t["name"] for t in h.get("tensors", [])] == ["weight"], (rc, out, err))
    check("progress bar on stderr", "100%" in err and "[" in err and err.endswith("\n"), err)
    back = os.path.join(tmp, "back.npy")
    rc, out, err = run("convert", st2, back)
    check("convert back to npy", rc == 0 and "100%" not in err, (rc, err))
    check("round trip values", rc == 0 and np.load(back).tolist() == np.arange(6, dtype=np.float32).reshape(2, 3).tolist())
    rc, out, err = run("convert", st, os.path.join(tmp, "one.npy"), "--json")
    e = json.loads(out) if out.strip() else {}
    check("two tensors to npy needs --name", rc == 1 and "--name" in e.get("message", ""), (rc, out))
    rc, out, err = run("convert", st, os.path.join(tmp, "b.npy"), "--name", "b")
    check("choose one tensor", rc == 0 and np.load(os.path.join(tmp, "b.npy")).tolist() == [5, 6], (rc, err))
    check("no temporary files left", sorted(n for n in os.listdir(tmp) if n.startswith(".")) == [], os.listdir(tmp))

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
