"""The mutation tool's own pieces (experiments/_mutation.py, _mutation_select.py): the annotation
filter, the interval and the options."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "experiments"))
import _mutation as mutation  # noqa: E402
import _mutation_select as select  # noqa: E402


def test_annotation_spans_cover_every_annotation_of_a_postponed_module() -> None:
    source = ("from __future__ import annotations\n"
              "x: int | None = None\n"
              "def f(a: int | None, *b: str, c: dict | None = None, **d: float) -> list[int] | None:\n"
              "    y: float = a\n"
              "    return [a | 1]\n")
    spans = select.annotation_spans(source)
    lines = source.splitlines()
    texts = sorted(lines[lo[0] - 1][lo[1]:hi[1]] for lo, hi in spans)
    assert texts == sorted(["int | None", "int | None", "str", "dict | None", "float", "list[int] | None", "float"])
    assert not any(lo[0] == 5 for lo, _ in spans)  # code is not an annotation


def test_annotations_evaluated_at_definition_are_kept() -> None:
    assert select.annotation_spans("def f(a: int | None) -> int:\n    return a\n") == []


@pytest.mark.parametrize("k, n, low, high", [(8, 10, 49.0, 94.3), (30, 30, 88.6, 100.0), (0, 30, 0.0, 11.4)])
def test_wilson_interval(k, n, low, high) -> None:
    lo, hi = select.wilson_interval(k, n)
    assert lo == pytest.approx(low, abs=0.05) and hi == pytest.approx(high, abs=0.05)


def test_sample_and_quick_exclude_each_other() -> None:
    assert mutation.parse_args(["mlgp/a.py", "tests/b.py", "--sample", "5"]).sample == 5
    for bad in (["--sample", "0"], ["--sample", "x"], ["--sample", "3", "--quick"]):
        with pytest.raises(SystemExit):
            mutation.parse_args(["mlgp/a.py", "tests/b.py", *bad])
