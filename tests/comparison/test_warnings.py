"""Warnings a family raises while it is fitted: raised again in the calling process from the caller
of :func:`mlgp.compare` (not from mlgp's own files), and shown by ``mlgp compare`` as one line."""

from __future__ import annotations

import os
import warnings

import pytest
from _compare_stubs import FOLDER, WarnsInFit, tiny

import mlgp
from mlgp.comparison import checks


def test_a_warning_is_raised_again_from_the_callers_line(monkeypatch) -> None:
    monkeypatch.setattr(checks, "make_estimator", lambda name, *args, **kwargs: WarnsInFit())
    with pytest.warns(UserWarning, match="planted advice") as caught:
        mlgp.compare("frequency", dataset=tiny(), isolate=False)
    assert len(caught) == 1 and caught[0].filename == __file__  # not mlgp/comparison/isolation.py


@pytest.mark.slow
def test_a_warning_in_a_worker_process_reaches_this_process(tmp_path, monkeypatch, capfd) -> None:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FOLDER), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setattr(checks, "make_estimator", lambda name, *args, **kwargs: WarnsInFit())
    with pytest.warns(UserWarning, match="planted advice"):
        mlgp.compare("frequency", dataset=tiny(), out=tmp_path / "c")
    assert "planted advice" not in capfd.readouterr().err  # the worker printed nothing of it


def test_mlgp_compare_shows_a_warning_as_one_line(tmp_path, monkeypatch, capsys) -> None:
    from _compare_stubs import command_line

    from mlgp.cli import main

    monkeypatch.setattr(checks, "make_estimator", lambda name, *args, **kwargs: WarnsInFit())
    assert main(command_line("compare", "frequency", tmp_path)) == 0
    err = capsys.readouterr().err.splitlines()
    said = [line for line in err if "planted advice" in line]
    assert said == ["mlgp: warning: WarnsInFit: planted advice the user can act on"], err
    assert not any(".py:" in line or "warnings.warn" in line for line in err), err
