"""Gaps found by mutation testing of :mod:`mlgp.estimator.recorder`: a row's ``seconds`` is the
step's own duration (the clock at ``end_step`` less the clock at ``begin_step``), not merely a
non-negative number."""

from __future__ import annotations

import types

import mlgp.estimator.recorder as recorder_module
from mlgp.estimator.recorder import StepRecorder


def test_seconds_is_the_clock_at_end_step_less_the_clock_at_begin_step(monkeypatch) -> None:
    """On a step clock reading 1000 s at ``begin_step`` and 1002.5 s at ``end_step`` the row's
    ``seconds`` is 2.5 (and the next step's is its own 0.5, not a running total)."""
    readings = iter([1000.0, 1002.5, 1010.0, 1010.5])
    monkeypatch.setattr(recorder_module, "time", types.SimpleNamespace(perf_counter=lambda: next(readings)))
    recorder = StepRecorder(None, ("iteration", "objective", "seconds"))
    seconds = []
    for it in (1, 2):
        recorder.begin_step()
        recorder.end_step()
        seconds.append(recorder.record(None, {"iteration": it, "objective": -1.0})["seconds"])
    assert seconds == [2.5, 0.5]


def test_a_loops_own_seconds_are_kept(monkeypatch) -> None:
    """A loop that times its steps itself passes ``seconds``; the recorder's clock does not replace it."""
    readings = iter([0.0, 7.0])
    monkeypatch.setattr(recorder_module, "time", types.SimpleNamespace(perf_counter=lambda: next(readings)))
    recorder = StepRecorder(None, ("iteration", "objective", "seconds"))
    recorder.begin_step()
    recorder.end_step()
    assert recorder.record(None, {"iteration": 1, "objective": 0.0, "seconds": 3.0})["seconds"] == 3.0
