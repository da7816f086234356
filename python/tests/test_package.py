"""The package itself (issue 12, items 1 and 6): importable from Debian's
interpreter as a package with the compiled core inside, honest about what is
not built, documented, and `python3 -m strideweave` prints the command-line
tour."""

import importlib
import inspect
import os
import pathlib
import re
import subprocess
import sys

import pytest

import strideweave as sw


def test_package_is_a_directory_with_the_compiled_core_inside():
    package = pathlib.Path(sw.__file__).parent
    assert (package / "__init__.py").is_file()
    assert pathlib.Path(sw._core.__file__).parent == package
    assert sw._core.__file__.endswith(".so")


def test_built_and_tested_for_debians_interpreter():
    # CTest runs the suite with /usr/bin/python3 (python/CMakeLists.txt), the
    # interpreter the module was compiled against.
    assert os.path.realpath(sys.executable) == os.path.realpath("/usr/bin/python3")
    assert sys.base_prefix == "/usr"


def test_version_is_the_projects():
    assert sw.__version__ == sw._core.__version__
    assert sw.__version__.count(".") == 2


def test_both_spec_submodules_are_bound():
    # operation-semantics.md and carrier-extension.md name these modules;
    # both are built (test_operation_semantics.py, test_carrier_extension.py).
    import strideweave.carriers.extension as extension
    import strideweave.operation as operation

    assert extension.CarrierDefinition is sw.CarrierDefinition
    assert operation.define_operation is sw.define_operation


def test_carriers_subpackage_names_the_same_classes():
    from strideweave import carriers

    assert carriers.Carrier is sw.Carrier
    assert carriers.DependentCarrier is sw.DependentCarrier
    assert carriers.Generic is sw.Generic
    assert carriers.CPU is sw.CPU


def test_top_level_reexports_the_cores_objects():
    for name in sw.__all__:
        if hasattr(sw._core, name):
            assert getattr(sw, name) is getattr(sw._core, name), name


def test_star_import_does_not_shadow_builtins():
    assert {"abs", "pow", "round"}.isdisjoint(sw.__all__)
    assert callable(sw.abs) and callable(sw.pow) and callable(sw.round)


def test_python_m_strideweave_prints_the_command_line_tour():
    # python3 -m strideweave computes the tour through the Python surface;
    # its text is the command-line tool's `strideweave tour`, line for line.
    env = dict(os.environ, STRIDEWEAVE_NUM_THREADS="1")
    ours = subprocess.run([sys.executable, "-m", "strideweave"], capture_output=True, text=True, env=env, check=True)
    assert "Registered operations:" in ours.stdout and "OverflowError" in ours.stdout
    cli = os.environ.get("STRIDEWEAVE_BIN")
    if not cli:
        pytest.skip("STRIDEWEAVE_BIN is not set (CTest sets it when the command-line tool is built)")
    theirs = subprocess.run([cli, "tour"], capture_output=True, text=True, env=env, check=True)
    assert ours.stdout == theirs.stdout


def _says_more_than_its_signature(doc):
    # pybind11 writes "name(arg: type) -> type" lines itself; help() is only
    # useful when the docstring adds words.
    lines = [line.strip() for line in (doc or "").splitlines()]
    return any(line and line != "Overloaded function." and not re.match(r"^(\d+\. )?\w+\(.*\)( -> .*)?$", line)
               for line in lines)


def test_every_public_function_class_and_method_has_a_docstring():
    # help() explains every public function, class and method (record fields
    # are described in their class's docstring).
    undocumented = []
    for name in sw.__all__:
        obj = getattr(sw, name)
        if not callable(obj):
            continue
        if not _says_more_than_its_signature(obj.__doc__):
            undocumented.append(name)
        if inspect.isclass(obj) and obj.__module__.startswith("strideweave"):
            for attr, member in vars(obj).items():
                if not attr.startswith("_") and callable(member) and not _says_more_than_its_signature(member.__doc__):
                    undocumented.append(f"{name}.{attr}")
    assert undocumented == []


def test_operations_show_their_python_signature():
    sig = inspect.signature(sw.reduce_sum)
    assert list(sig.parameters)[:1] == ["x"] and sig.parameters["x"].kind is inspect.Parameter.POSITIONAL_ONLY
    assert sig.parameters["keepdims"].kind is inspect.Parameter.KEYWORD_ONLY
    assert "options" in sig.parameters and "out" in sig.parameters
    assert "Options (keyword-only)" in sw.reduce_sum.__doc__
