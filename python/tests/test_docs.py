"""docs/python.md's and docs/creation.md's examples run (issue 12, "Done
when": the Python-defined carrier and the numpy round trips shown there are
tested; issue 21, step 1): every ```python block of each page is executed,
each in a fresh namespace."""

import pathlib
import re

import pytest

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs"
PAGES = {"python.md": 2, "creation.md": 1}  # each page and the examples it has at least
BLOCKS = [(page, index, block) for page in PAGES
          for index, block in enumerate(re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), flags=re.S))]


@pytest.mark.parametrize("page", PAGES)
def test_the_page_has_examples(page):
    assert sum(1 for p, _, _ in BLOCKS if p == page) >= PAGES[page]


@pytest.mark.parametrize("page, index, block", BLOCKS, ids=[f"{p}-{i}" for p, i, _ in BLOCKS])
def test_example_runs(page, index, block):
    exec(compile(block, f"{page}[python block {index}]", "exec"), {})
