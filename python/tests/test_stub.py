"""The type stub strideweave/__init__.pyi (issue 12, item 6) against the
running module: it declares every public name and every public method, only
names that exist, and each operation's parameters exactly as inspect sees
them."""

import ast
import enum
import functools
import inspect
import pathlib

import pytest

import strideweave as sw

STUB = pathlib.Path(sw.__file__).with_name("__init__.pyi")


@functools.lru_cache(maxsize=None)
def stub_tree():
    return ast.parse(STUB.read_text())


def top_level(tree):
    names = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.setdefault(node.name, node)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node
        elif isinstance(node, ast.ImportFrom) and node.level > 0:  # `from . import carriers`
            for alias in node.names:
                names[alias.asname or alias.name] = node
    return names


def class_members(node):
    members = set()
    for item in node.body:
        if isinstance(item, ast.FunctionDef):
            members.add(item.name)
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            members.add(item.target.id)
        elif isinstance(item, ast.Assign):
            members.update(t.id for t in item.targets if isinstance(t, ast.Name))
    return members


def test_the_stub_is_installed_beside_the_module():
    assert STUB.is_file() and STUB.with_name("py.typed").is_file()


def test_every_public_name_is_declared_and_every_declaration_exists():
    declared = {n for n in top_level(stub_tree()) if not n.startswith("_")}
    public = set(sw.__all__) | {"abs", "pow", "round"}
    assert public - declared == set()
    assert {n for n in declared - public if not hasattr(sw, n)} == set()


def _runtime_members(cls):
    out = set()
    for klass in cls.__mro__:
        if klass.__module__.startswith("strideweave"):
            out.update(n for n in vars(klass) if not n.startswith("_"))
    return out


@pytest.mark.parametrize("name", sorted(n for n in sw.__all__ if inspect.isclass(getattr(sw, n))))
def test_every_public_method_of_a_class_is_declared(name):
    cls = getattr(sw, name)
    node = top_level(stub_tree())[name]
    declared = set()
    names = top_level(stub_tree())
    # Declarations of the stub's base classes count for a subclass.
    stack = [node]
    while stack:
        n = stack.pop()
        declared |= class_members(n)
        stack.extend(names[b.id] for b in n.bases
                     if isinstance(b, ast.Name) and isinstance(names.get(b.id), ast.ClassDef))
    if issubclass(cls, tuple) or issubclass(cls, BaseException):
        return  # NamedTuple / exception machinery is the standard library's
    runtime = _runtime_members(cls)
    if issubclass(cls, enum.Enum):
        runtime = set(cls.__members__)
    assert runtime - declared == set()
    assert {m for m in declared if not m.startswith("__") and not hasattr(cls, m)} == set()


@pytest.mark.parametrize("name", sw.OPERATION_NAMES)
def test_operation_signatures_match(name):
    node = top_level(stub_tree())[name]
    args = node.args
    stub = [(a.arg, "positional") for a in args.posonlyargs] + [(a.arg, "keyword") for a in args.kwonlyargs]
    runtime = [(p.name, "positional" if p.kind is inspect.Parameter.POSITIONAL_ONLY else "keyword")
               for p in inspect.signature(getattr(sw, name)).parameters.values()]
    assert stub == runtime


OPERATION_STUB = STUB.with_name("operation.pyi")


def test_operation_stub_declares_the_module_and_only_what_exists():
    from strideweave import operation

    tree = ast.parse(OPERATION_STUB.read_text())
    # `from . import X as X` counts: the package stub declares the shared records.
    declared = {n for n in top_level(tree) if not n.startswith("_")}
    public = {n for n in vars(operation) if not n.startswith("_")}
    assert public - declared == set()
    assert {n for n in declared if not hasattr(operation, n)} == set()


@pytest.mark.parametrize("name", ["BoundOperationCall", "ResolvedInvocation", "VJPContext"])
def test_operation_stub_declares_every_public_method(name):
    from strideweave import operation

    node = top_level(ast.parse(OPERATION_STUB.read_text()))[name]
    runtime = _runtime_members(getattr(operation, name))
    declared = class_members(node)
    assert runtime - declared == set()
    assert {m for m in declared if not m.startswith("__") and not hasattr(getattr(operation, name), m)} == set()


# ---- issue 20, step 7: the operation section is generated from the module

SOURCE_STUB = pathlib.Path(__file__).resolve().parents[1] / "strideweave" / "__init__.pyi"
GENERATOR = pathlib.Path(__file__).resolve().parents[2] / "scripts" / "gen_stub.py"


@functools.lru_cache(maxsize=None)
def gen_stub():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_stub", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("stub", sorted({STUB, SOURCE_STUB}), ids=str)
def test_the_operation_section_is_what_the_generator_writes_from_the_module(stub):
    text = stub.read_text()
    assert gen_stub().render(text, sw) == text, "run scripts/gen_stub.py (operations.def changed)"


def test_the_generated_section_declares_every_operation_once_and_nothing_else():
    section = gen_stub().generated_section(sw)
    names = [line.split("(")[0][len("def "):] for line in section.splitlines() if line.startswith("def ")]
    assert names == sorted(sw.OPERATION_NAMES)


def test_a_drifted_stub_is_caught(tmp_path):
    # The check can fail: a stub whose elu lost its option differs from the
    # generated one, and --check exits 1 without touching the file.
    text = STUB.read_text()
    line = "def elu(x: _Operand, /, *, alpha: float = ..., out: _Out = ...) -> Tensor: ...\n"
    assert line in text
    drifted = tmp_path / "__init__.pyi"
    drifted.write_text(text.replace(line, "def elu(x: _Operand, /, *, out: _Out = ...) -> Tensor: ...\n"))
    assert gen_stub().render(drifted.read_text(), sw) == text
    assert gen_stub().main(["--check", "--stub", str(drifted)]) == 1
    assert "alpha" not in drifted.read_text().split("def elu(")[1].split("\n")[0]
    assert gen_stub().main(["--stub", str(drifted)]) == 0
    assert drifted.read_text() == text
