"""Issue 21, step 5: examples/tour.py, the walkthrough a numpy user reads
top to bottom, runs in the suite (every assert in it is a claim it makes)."""

import pathlib
import runpy

TOUR = pathlib.Path(__file__).resolve().parents[2] / "examples" / "tour.py"


def test_issue21_step5_the_tour_runs(capsys):
    runpy.run_path(str(TOUR), run_name="__main__")
    assert capsys.readouterr().out.strip().endswith("tour: every claim held")


def test_issue21_step5_the_tour_covers_what_the_issue_lists():
    text = TOUR.read_text()
    for section in ("creation", "views and the order", "arithmetic", "reductions", "autograd", "formats",
                    "a custom operation", "out of memory"):
        assert f". {section}" in text, section
    assert "FileBacked" in text and "reshape(6, order=\"C\")" in text
