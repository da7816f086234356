#!/usr/bin/env python3
"""Checks that every #include in the library, the conformance harness, the
tools and the Python binding points down the layer order of cmake/layers.txt.

Rules (docs/design.md, "Layers"):
  - a file of layer L includes public headers and src/ headers only of L and
    of the layers below L (transitively through cmake/layers.txt);
  - a file in src/carriers/<name>/ never includes another carrier's folder
    (src/carriers/<other>/ or that carrier's public header);
  - conformance/, tools/ and python/src/ include no src/ header (they use the
    public API);
  - every public header is assigned to exactly one layer.
Exit status 0 when clean; otherwise each violation is printed (file:line)
and the status is 1.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def read_layers():
    layers, public, section = {}, {}, None
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
    return layers, public


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


def carrier_folder(path):
    rel = path.relative_to(ROOT).parts
    return rel[2] if len(rel) > 3 and rel[:2] == ("src", "carriers") else None


def main():
    layers, public = read_layers()
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
             if p.suffix in (".h", ".cpp", ".def") and p.is_file()]
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
        folder = carrier_folder(path)
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
                if folder and header in carrier_headers and carrier_headers[header] != folder and header != "carriers/shipped.h":
                    problems.append(f"{rel}:{number}: the {folder} carrier includes another carrier's header {target}")
            elif m.group(1) == '"' and (ROOT / "src" / target).is_file():
                if layer in ("conformance", "tools", "python"):
                    problems.append(f"{rel}:{number}: {layer} includes the internal header src/{target}")
                    continue
                target_layer = pathlib.PurePosixPath(target).parts[0]
                parts = pathlib.PurePosixPath(target).parts
                if folder and len(parts) > 2 and parts[0] == "carriers" and parts[1] != folder:
                    problems.append(f"{rel}:{number}: the {folder} carrier includes another carrier's folder ({target})")
            else:
                continue
            if target_layer not in allowed:
                problems.append(f"{rel}:{number}: layer {layer} includes {target} of the higher layer {target_layer}")
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} violation(s) of cmake/layers.txt", file=sys.stderr)
        return 1
    print(f"check_layers: {len(files)} files follow cmake/layers.txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
