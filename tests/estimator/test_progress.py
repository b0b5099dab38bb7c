"""The one progress mechanism (:mod:`mlgp.estimator.progress`): lines off a terminal every
``LINE_SECONDS`` of the fit's own seconds (a fake clock here), a bar on a terminal, nothing when off."""

from __future__ import annotations

import io

from _clock import FakeClock

from mlgp.estimator import progress
from mlgp.estimator.progress import Progress


def _lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_off_a_terminal_a_line_comes_every_interval_of_the_fits_seconds():
    """Units of 3 s each (a clock that moves 1 s per step, 3 steps a unit) and lines due every 10 s:
    the start, the first unit, then the units and steps at which 10 s have passed, and the last."""
    clock, stream = FakeClock(tick=0.0), io.StringIO()
    bar = Progress("MLGPF fit", 8, elapsed=lambda: clock.now, stream=stream, every=10.0)
    assert not bar.bars and _lines(stream) == ["MLGPF fit: started, 8 epochs"]
    clock.now = 0.0
    for epoch in range(8):
        for step in range(1, 4):
            clock.advance(1.0)
            if step < 3:
                bar.step_done(step, 3)
        bar.unit_done(setup=0.5 if epoch == 0 else None, shown={"elbo": -100.0 + epoch, "held-out lpd": None})
    bar.close()
    assert _lines(stream)[1:] == [
        "MLGPF fit: epoch 1/8 (first step at 0.5 s), 3.0 s, elbo -100",
        "MLGPF fit: epoch 5/8, step 1/3, 13.0 s",
        "MLGPF fit: epoch 8/8, step 2/3, 23.0 s",
        "MLGPF fit: epoch 8/8, 24.0 s, elbo -93",
    ]


def test_the_interval_is_the_module_constant(monkeypatch):
    monkeypatch.setattr(progress, "LINE_SECONDS", 2.0)
    clock, stream = FakeClock(tick=0.0), io.StringIO()
    bar = Progress("GenEML EM", 5, unit="iteration", elapsed=lambda: clock.now, stream=stream)
    for _ in range(5):
        clock.advance(1.0)
        bar.unit_done()
    assert [line.split(", ")[0] for line in _lines(stream)] == [
        "GenEML EM: started", "GenEML EM: iteration 1/5", "GenEML EM: iteration 3/5", "GenEML EM: iteration 5/5"]


def test_a_loop_that_stops_early_prints_its_last_unit():
    clock, stream = FakeClock(tick=0.0), io.StringIO()
    bar = Progress("MLGPF fit", 50, elapsed=lambda: clock.now, stream=stream, every=10.0)
    for epoch in range(3):
        clock.advance(1.0)
        bar.unit_done(last=epoch == 2, shown={"elbo": float("nan"), "held-out lpd": -7.5})
    assert _lines(stream)[-1] == "MLGPF fit: epoch 3/50, 3.0 s, held-out lpd -7.5"


def test_disabled_prints_nothing():
    stream = io.StringIO()
    bar = Progress("MLGPF fit", 3, enabled=False, elapsed=lambda: 100.0, stream=stream, every=0.0)
    for item in bar.wrap(range(3)):
        bar.step_done(1, 2)
    bar.unit_done(last=True, shown={"elbo": 1.0})
    bar.close("stopped")
    assert stream.getvalue() == ""


def test_on_a_terminal_a_bar_is_drawn_under_its_name():
    stream = io.StringIO()
    bar = Progress("MLGPF refit on all rows", 2, stream=stream, bars=True)
    bar.unit_done(shown={"elbo": -5.0})
    bar.unit_done()
    bar.close()
    out = stream.getvalue()
    assert "MLGPF refit on all rows" in out and "2/2" in out


def test_a_stream_that_is_not_a_terminal_gets_lines_and_a_terminal_a_bar():
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert progress.draws_bars(Terminal()) and not progress.draws_bars(io.StringIO())
