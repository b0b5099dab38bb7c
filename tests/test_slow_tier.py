"""``tests/_slow_tier.py`` (which functions belong in the slow tier) and the suite's closing line
saying that the slow tier was left out."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import _slow_tier


def _root_conftest():
    """``tests/conftest.py`` itself (``import conftest`` may find another folder's)."""
    spec = importlib.util.spec_from_file_location("root_conftest", Path(__file__).with_name("conftest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

REPORT = """============================= slowest durations =============================
5.50s call     tests/a/test_x.py::test_big[1-2]
1.25s call     tests/a/test_x.py::test_big[3-4]
0.25s setup    tests/a/test_x.py::test_big[1-2]
0.10s teardown tests/a/test_x.py::test_small
0.75s call     tests/a/test_x.py::test_small
(12 durations < 0.005s hidden.  Use -vv to show these durations.)
"""


def test_seconds_are_summed_over_parameters_and_phases() -> None:
    assert _slow_tier.function_seconds(REPORT) == {"tests/a/test_x.py::test_big": 7.0,
                                                   "tests/a/test_x.py::test_small": 0.85}


def _source(tmp_path):
    path = tmp_path / "test_y.py"
    path.write_text("import pytest\n\n\n"
                    "@pytest.mark.slow\n@pytest.mark.parametrize('n', [1, 2])\ndef test_marked(n):\n    pass\n\n\n"
                    "@pytest.mark.parametrize('n', [1])\ndef test_plain(n):\n    pass\n\n\n"
                    "def test_after_blank():\n    pass\n")
    return path


def test_marks_are_read_from_the_decorators(tmp_path) -> None:
    path = _source(tmp_path)
    assert _slow_tier.marked_slow(f"{path}::test_marked")
    assert not _slow_tier.marked_slow(f"{path}::test_plain")
    assert not _slow_tier.marked_slow(f"{path}::test_after_blank")  # a mark further up is another function's
    assert not _slow_tier.marked_slow(f"{path}::test_missing")


def test_main_names_the_functions_to_move(tmp_path, capsys) -> None:
    path = _source(tmp_path)
    report = tmp_path / "durations.txt"
    report.write_text(f"4.00s call     {path}::test_plain[1]\n0.90s call     {path}::test_marked[1]\n"
                      f"3.99s call     {path}::test_after_blank\n")
    _slow_tier.main([str(report)])
    assert capsys.readouterr().out.splitlines() == [f"to the slow tier:   4.00 s {path}::test_plain",
                                                    f"may come back:      0.90 s {path}::test_marked"]
    _slow_tier.main([str(report), "--seconds", "3.5"])
    assert capsys.readouterr().out.splitlines() == [f"to the slow tier:   4.00 s {path}::test_plain",
                                                    f"to the slow tier:   3.99 s {path}::test_after_blank"]


def test_the_summary_says_when_the_slow_tier_was_left_out() -> None:
    conftest = _root_conftest()
    for markexpr, said in (("not slow", True), ("slow", False), ("", False)):
        lines: list[str] = []
        config = SimpleNamespace(getoption=lambda name, default=None, m=markexpr: m if name == "markexpr" else default)
        conftest.pytest_terminal_summary(SimpleNamespace(write_line=lines.append), 0, config)
        assert bool(lines) == said and all("pytest -m slow" in line for line in lines)
