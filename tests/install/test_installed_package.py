#!/usr/bin/env python3
"""An installed package that runs anywhere (issue 24, item 8).

Installs the build tree (`cmake --install BUILD --prefix PREFIX`) into a
temporary folder, moves that folder elsewhere, and then runs what was
installed with nothing pointing at the library: no LD_LIBRARY_PATH, no
build tree. The installed `bin/strideweave` and the installed Python module
`strideweave._core` must find `lib/libstrideweave.so` of the SAME prefix
through a relative ($ORIGIN) run path, so the folder may live anywhere.

Checks, one line each on failure and a closing 'N passed, N failed' line:
  - every run path (DT_RUNPATH/DT_RPATH, `readelf -d`) of the installed
    program, module and library is $ORIGIN-relative, and the program and
    module have one;
  - `bin/strideweave resolve add ...` and `run add ...` give the documented
    answers, and the program loads the prefix's libstrideweave.so (`ldd`);
  - `/usr/bin/python3` imports the installed package (PYTHONPATH set to the
    installed package folder only), computes with it, and the process has the
    prefix's libstrideweave.so mapped.

Environment (set by CTest, tests/CMakeLists.txt):
  STRIDEWEAVE_BUILD_DIR    the build tree to install
  STRIDEWEAVE_CMAKE        the cmake program
  STRIDEWEAVE_BINDIR, STRIDEWEAVE_LIBDIR, STRIDEWEAVE_PYTHON_INSTALL_DIR
                           the install destinations, relative to the prefix
  STRIDEWEAVE_PYTHON       the interpreter the module was built for
  STRIDEWEAVE_PYTHON_PRELOAD   (sanitized builds) the sanitizer runtime the
                           uninstrumented interpreter must load first
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# A bound that only a hung command reaches (not a timing requirement).
HANG_BOUND_S = 10 * 60

BUILD = os.environ["STRIDEWEAVE_BUILD_DIR"]
CMAKE = os.environ.get("STRIDEWEAVE_CMAKE", "cmake")
BINDIR = os.environ.get("STRIDEWEAVE_BINDIR", "bin")
LIBDIR = os.environ.get("STRIDEWEAVE_LIBDIR", "lib")
PYDIR = os.environ["STRIDEWEAVE_PYTHON_INSTALL_DIR"]
PYTHON = os.environ.get("STRIDEWEAVE_PYTHON", "/usr/bin/python3")
PRELOAD = os.environ.get("STRIDEWEAVE_PYTHON_PRELOAD", "")

passed = failed = 0


def check(name, condition, detail=""):
    global passed, failed
    if condition:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")


def clean_env(**extra):
    """The caller's environment without anything that locates libraries or
    Python packages, plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "PYTHONPATH", "PYTHONHOME")
           and not k.startswith("STRIDEWEAVE_")}
    env.update(extra)
    return env


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=HANG_BOUND_S, **kw)


def run_paths(path):
    """The DT_RUNPATH and DT_RPATH entries of an ELF file (readelf -d)."""
    p = run(["readelf", "-d", path])
    if p.returncode != 0:
        return None
    return re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library (?:runpath|rpath): \[(.*)\]", p.stdout)


def under(path, folder):
    return os.path.realpath(path).startswith(os.path.realpath(folder) + os.sep)


scratch = tempfile.mkdtemp(prefix="strideweave-install-")
try:
    # --- install, then move the prefix: only relative paths survive that ------
    first = os.path.join(scratch, "first")
    p = run([CMAKE, "--install", BUILD, "--prefix", first])
    check("cmake --install exits 0", p.returncode == 0, p.stdout + p.stderr)
    if p.returncode != 0:
        raise SystemExit(1)
    prefix = os.path.join(scratch, "moved", "elsewhere")
    os.makedirs(os.path.dirname(prefix))
    shutil.move(first, prefix)

    program = os.path.join(prefix, BINDIR, "strideweave")
    library = os.path.join(prefix, LIBDIR, "libstrideweave.so")
    modules = glob.glob(os.path.join(prefix, PYDIR, "strideweave", "_core*.so"))
    check("installed: bin/strideweave", os.path.isfile(program), program)
    check("installed: libstrideweave.so", os.path.isfile(library), library)
    check("installed: one strideweave/_core module", len(modules) == 1, modules)

    # --- run paths: present where needed, and relative ------------------------
    for name, path, needs_one in [("bin/strideweave", program, True),
                                  ("_core module", modules[0] if modules else None, True),
                                  ("libstrideweave.so", library, False)]:
        if path is None or not os.path.isfile(path):
            continue
        entries = run_paths(path)
        check(f"readelf -d {name}", entries is not None, path)
        dirs = [d for e in (entries or []) for d in e.split(":") if d]
        if needs_one:
            check(f"{name} has a run path", len(dirs) > 0, entries)
        check(f"{name}: every run path is $ORIGIN-relative",
              all(d.startswith("$ORIGIN") for d in dirs), dirs)

    env = clean_env()

    # --- the program ----------------------------------------------------------
    p = run(["ldd", program], env=env)
    lib_line = [ln for ln in p.stdout.splitlines() if "libstrideweave.so" in ln]
    check("ldd bin/strideweave: libstrideweave.so is the prefix's",
          len(lib_line) == 1 and "=>" in lib_line[0]
          and under(lib_line[0].split("=>")[1].split("(")[0].strip(), prefix),
          p.stdout + p.stderr)

    p = run([program, "resolve", "add", "dtype:float32", "dtype:int32", "--json"], env=env, cwd=scratch)
    check("bin/strideweave resolve add exits 0", p.returncode == 0, (p.returncode, p.stdout, p.stderr))
    if p.returncode == 0:
        plan = json.loads(p.stdout)
        plan = plan.get("plan", plan)
        check("resolve add float32+int32 gives a float32 output",
              plan.get("operation") == "add" and plan.get("output") == "float32", p.stdout)

    p = run([program, "run", "add", "tensor:float32:[[1,2],[3,4]]", "tensor:float32:[[10,20],[30,40]]",
             "--json"], env=env, cwd=scratch)
    check("bin/strideweave run add exits 0", p.returncode == 0, (p.returncode, p.stdout, p.stderr))
    if p.returncode == 0:
        doc = json.loads(p.stdout)
        check("run add: values", doc.get("result", {}).get("values") == [[11.0, 22.0], [33.0, 44.0]], p.stdout)

    # --- the Python module ----------------------------------------------------
    probe = r"""
import json, os, strideweave as sw
a = sw.tensor([[1.0, 2.0], [3.0, 4.0]])
b = sw.tensor([[10.0, 20.0], [30.0, 40.0]])
c = (a + b) * 2
with open("/proc/self/maps") as f:
    libs = sorted({line.split()[-1] for line in f if line.rstrip().endswith("libstrideweave.so")})
print(json.dumps({"package": os.path.dirname(sw.__file__), "values": c.tolist(),
                  "matmul": (a @ b).tolist(), "libs": libs}))
"""
    pyenv = clean_env(PYTHONPATH=os.path.join(prefix, PYDIR), PYTHONDONTWRITEBYTECODE="1")
    if PRELOAD:
        pyenv["LD_PRELOAD"] = PRELOAD
        # CPython's own allocations live as long as the process (not leaks of strideweave).
        pyenv["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=1:allocator_may_return_null=1"
    p = run([PYTHON, "-c", probe], env=pyenv, cwd=scratch)
    check("python3 imports the installed package", p.returncode == 0, (p.returncode, p.stdout, p.stderr))
    if p.returncode == 0:
        doc = json.loads(p.stdout.strip().splitlines()[-1])
        check("the package imported is the installed one", under(doc["package"], prefix), doc["package"])
        check("python: (a + b) * 2", doc["values"] == [[22.0, 44.0], [66.0, 88.0]], doc["values"])
        check("python: a @ b", doc["matmul"] == [[70.0, 100.0], [150.0, 220.0]], doc["matmul"])
        check("python: libstrideweave.so mapped is the prefix's",
              len(doc["libs"]) == 1 and under(doc["libs"][0], prefix), doc["libs"])
finally:
    shutil.rmtree(scratch, ignore_errors=True)

print(f"installed package: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
