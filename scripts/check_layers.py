#!/usr/bin/env python3
"""Checks that every #include in the library, the conformance harness, the
tools and the Python binding points down the layer order of cmake/layers.txt.

Rules (docs/design.md, "Layers"):
  - a file of layer L includes public headers and src/ headers only of L and
    of the layers below L (transitively through cmake/layers.txt);
  - a file in src/carriers/<name>/ never includes another carrier's folder
    (src/carriers/<other>/ or that carrier's public header); the one
    exception: a device carrier of the [public-only] layer may include
    carriers/cpu.h, because the TransferRoute it declares to host memory
    names the CPU class (carrier-extension R2.3: a definition's routes start
    at its own class; docs/extension.md);
  - conformance/, tools/ and python/src/ include no src/ header (they use the
    public API);
  - a layer listed under [public-only] (extension_carriers: the shipped
    carriers built like an out-of-tree one) includes public headers and, of
    src/, only its own headers: a file in src/<layer>/<folder>/ its own
    folder's, a file at src/<layer>/ the layer's top-level headers; and one
    carrier folder never includes another's;
  - every public header is assigned to exactly one layer.
Exit status 0 when clean; otherwise each violation is printed (file:line)
and the status is 1.

  check_layers.py [--root DIR]   check the tree at DIR (default: this checkout)
  check_layers.py --self-test    check that the rules catch what they must, on
                                 a small tree built in a temporary directory
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def read_layers():
    layers, public, public_only, section = {}, {}, set(), None
    for raw in (ROOT / "cmake" / "layers.txt").read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        name, _, rest = line.partition(":")
        items = rest.split()
        if section == "layers":
            layers[name.strip()] = items
        elif section == "public":
            for header in items:
                if header in public:
                    sys.exit(f"cmake/layers.txt: {header} is assigned twice")
                public[header] = name.strip()
        elif section == "public-only":
            public_only.add(name.strip())
    return layers, public, public_only


def closure(layers):
    below = {}

    def visit(name, seen=()):
        if name in seen:
            sys.exit(f"cmake/layers.txt: a cycle through {name}")
        if name not in below:
            out = set()
            for lower in layers[name]:
                out |= {lower} | visit(lower, seen + (name,))
            below[name] = out
        return below[name]

    for name in layers:
        visit(name)
    return below


def layer_of(path):
    rel = path.relative_to(ROOT)
    if rel.parts[0] == "src":
        return rel.parts[1]
    if rel.parts[0] in ("conformance", "tools"):
        return rel.parts[0]
    if rel.parts[:2] == ("python", "src"):
        return "python"
    return None


def carrier_folder(path, public_only=()):
    rel = path.relative_to(ROOT).parts
    if len(rel) > 3 and rel[0] == "src" and (rel[1] == "carriers" or rel[1] in public_only):
        return rel[2]
    return None


def main():
    layers, public, public_only = read_layers()
    below = closure(layers)
    problems = []
    for header in sorted((ROOT / "include" / "strideweave").rglob("*")):
        if header.is_file():
            name = header.relative_to(ROOT / "include" / "strideweave").as_posix()
            if name not in public:
                problems.append(f"include/strideweave/{name}: not assigned to a layer in cmake/layers.txt")
            elif public[name] not in layers:
                problems.append(f"cmake/layers.txt: {name} names the unknown layer {public[name]}")
    files = [p for d in ("src", "conformance", "tools", "python/src") for p in (ROOT / d).rglob("*")
             if p.suffix in (".h", ".cpp", ".cu", ".def") and p.is_file()]
    for header in (ROOT / "include" / "strideweave").rglob("*"):
        if header.is_file():
            files.append(header)
    carrier_headers = {h: h.split("/")[1].rsplit(".", 1)[0] for h in public if h.startswith("carriers/")}
    for path in sorted(files):
        rel = path.relative_to(ROOT)
        if rel.parts[0] == "include":
            layer = public.get(rel.relative_to("include/strideweave").as_posix())
        else:
            layer = layer_of(path)
        if layer is None:
            continue
        if layer not in layers:
            problems.append(f"{rel}: the folder is not a layer of cmake/layers.txt")
            continue
        allowed = {layer} | below[layer]
        folder = carrier_folder(path, public_only)
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(2)
            if target.startswith("strideweave/"):
                header = target[len("strideweave/"):]
                target_layer = public.get(header)
                if target_layer is None:
                    problems.append(f"{rel}:{number}: includes {target}, which is no assigned public header")
                    continue
                host_route = header == "carriers/cpu.h" and layer in public_only
                if (folder and header in carrier_headers and carrier_headers[header] != folder
                        and header != "carriers/shipped.h" and not host_route):
                    problems.append(f"{rel}:{number}: the {folder} carrier includes another carrier's header {target}")
            else:
                # A quoted include may be relative to the including file;
                # an angle-bracket one may name src/ (it is on the include
                # path). Either way, what it reaches under src/ is internal.
                resolved = None
                if m.group(1) == '"' and (path.parent / target).is_file():
                    candidate = (path.parent / target).resolve()
                    if (ROOT / "src") in candidate.parents and candidate != path.resolve():
                        resolved = candidate.relative_to((ROOT / "src").resolve()).as_posix()
                if resolved is None and (ROOT / "src" / target).is_file():
                    resolved = target
                if resolved is None:
                    continue
                target = resolved
            if not target.startswith("strideweave/") and (ROOT / "src" / target).is_file():
                if layer in ("conformance", "tools", "python"):
                    problems.append(f"{rel}:{number}: {layer} includes the internal header src/{target}")
                    continue
                if layer in public_only:
                    parts = pathlib.PurePosixPath(target).parts
                    own = parts[0] == layer and (len(parts) == 2 or (folder is not None and parts[1] == folder))
                    if not own:
                        problems.append(f"{rel}:{number}: layer {layer} uses only the public surface and its own "
                                        f"folder, but includes src/{target}")
                        continue
                target_layer = pathlib.PurePosixPath(target).parts[0]
                parts = pathlib.PurePosixPath(target).parts
                if folder and len(parts) > 2 and parts[0] in ("carriers", layer) and parts[1] != folder:
                    problems.append(f"{rel}:{number}: the {folder} carrier includes another carrier's folder ({target})")
            if target_layer not in allowed:
                problems.append(f"{rel}:{number}: layer {layer} includes {target} of the higher layer {target_layer}")
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} violation(s) of cmake/layers.txt", file=sys.stderr)
        return 1
    print(f"check_layers: {len(files)} files follow cmake/layers.txt")
    return 0


def self_test():
    """Builds a small tree that breaks each [public-only] rule once, checks
    that exactly those lines are reported, and that the clean tree passes."""
    import shutil
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        (root / "cmake").mkdir()
        (root / "cmake" / "layers.txt").write_text(
            "[layers]\ncore:\nstorage: core\nextension_carriers: storage\n"
            "[public]\ncore: errors.h\nstorage: carrier.h\nextension_carriers: extension_carriers/widget.h\n"
            "[public-only]\nextension_carriers:\n")
        for header in ("errors.h", "carrier.h", "extension_carriers/widget.h"):
            (root / "include" / "strideweave" / header).parent.mkdir(parents=True, exist_ok=True)
            (root / "include" / "strideweave" / header).write_text("#pragma once\n")
        for internal in ("storage/ranges.h", "extension_carriers/list.h", "extension_carriers/widget/tiles.h",
                         "extension_carriers/gadget/parts.h"):
            (root / "src" / internal).parent.mkdir(parents=True, exist_ok=True)
            (root / "src" / internal).write_text("#pragma once\n")
        clean = ('#include <strideweave/carrier.h>\n#include <strideweave/extension_carriers/widget.h>\n'
                 '#include "extension_carriers/list.h"\n#include "extension_carriers/widget/tiles.h"\n')
        widget = root / "src" / "extension_carriers" / "widget" / "widget.cpp"
        widget.write_text(clean)
        for d in ("conformance", "tools", "python/src"):
            (root / d).mkdir(parents=True, exist_ok=True)
        script = pathlib.Path(__file__).resolve()
        run = lambda: subprocess.run([sys.executable, str(script), "--root", str(root)], capture_output=True,
                                     text=True)
        ok = run()
        if ok.returncode != 0:
            print(f"self-test: the clean tree was refused:\n{ok.stdout}")
            return 1
        widget.write_text(clean + '#include "storage/ranges.h"\n#include "extension_carriers/gadget/parts.h"\n'
                          '#include <storage/ranges.h>\n#include "../../storage/ranges.h"\n#include "../gadget/parts.h"\n')
        bad = run()
        refused = "layer extension_carriers uses only the public surface and its own folder, but includes"
        expected = [f"src/extension_carriers/widget/widget.cpp:5: {refused} src/storage/ranges.h",
                    f"src/extension_carriers/widget/widget.cpp:6: {refused} src/extension_carriers/gadget/parts.h",
                    f"src/extension_carriers/widget/widget.cpp:7: {refused} src/storage/ranges.h",
                    f"src/extension_carriers/widget/widget.cpp:8: {refused} src/storage/ranges.h",
                    f"src/extension_carriers/widget/widget.cpp:9: {refused} src/extension_carriers/gadget/parts.h"]
        if bad.returncode != 1 or bad.stdout.splitlines() != expected:
            print(f"self-test: expected exactly\n{expected}\ngot (status {bad.returncode})\n{bad.stdout}")
            return 1
        shutil.rmtree(root / "src" / "extension_carriers" / "gadget")
    print("check_layers: self-test passed (the [public-only] rule refuses internal and other-carrier headers)")
    return 0


if __name__ == "__main__":
    if "--self-test" in sys.argv:
        sys.exit(self_test())
    if "--root" in sys.argv:
        ROOT = pathlib.Path(sys.argv[sys.argv.index("--root") + 1]).resolve()
    sys.exit(main())
