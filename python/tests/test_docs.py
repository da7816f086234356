"""docs/python.md's examples run (issue 12, "Done when": the Python-defined
carrier and the numpy round trips shown there are tested): every ```python
block of the page is executed, each in a fresh namespace."""

import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_page_has_examples():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(index):
    exec(compile(BLOCKS[index], f"{DOC.name}[python block {index}]", "exec"), {})
