"""A fake clock for the budget of every family (:mod:`mlgp.estimator.training`).

Only :class:`mlgp.estimator.training.Budget` reads it (once when made, at the start of ``fit``, and
once per look after each training step), so with ``tick=1`` a fit whose ``max_seconds`` is 3.5
takes exactly 4 steps; :meth:`FakeClock.advance` stands for slow work between readings (set-up,
compilation).
"""

from __future__ import annotations


class FakeClock:
    """A clock that moves ``tick`` seconds per reading, and by :meth:`advance`."""

    def __init__(self, tick: float = 1.0) -> None:
        self.now = -tick
        self.tick = tick
        self.readings = 0

    def __call__(self) -> float:
        self.now += self.tick
        self.readings += 1
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def fake_clock(monkeypatch, tick: float = 1.0) -> FakeClock:
    """Install a :class:`FakeClock` as the budget's clock for one test."""
    import mlgp.estimator.training as training

    clock = FakeClock(tick)
    monkeypatch.setattr(training, "perf_counter", clock)
    return clock
