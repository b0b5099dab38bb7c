"""A fake clock for the budget of every family (:mod:`mlgp.estimator.budget`).

Only :class:`mlgp.estimator.budget.Budget` reads it (once when made, at the start of ``fit``, and
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
    import mlgp.estimator.budget as training

    clock = FakeClock(tick)
    monkeypatch.setattr(training, "perf_counter", clock)
    return clock


def slowed(monkeypatch, clock: FakeClock, module, name: str, seconds: float = 100.0) -> None:
    """Make ``module.name`` take ``seconds`` on ``clock`` before doing its work (slow set-up)."""
    real = getattr(module, name)

    def slow(*args, **kwargs):
        clock.advance(seconds)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, slow)


def random_problem(num_points: int, num_features: int, num_labels: int, seed: int):
    """CSR features (N, D) of density 0.3 and CSR 0/1 labels (N, K) of density 0.3, for budget tests."""
    import numpy as np
    import scipy.sparse as sp

    X = sp.random(num_points, num_features, density=0.3, random_state=seed, format="csr")
    Y = sp.csr_matrix((np.random.default_rng(0).random((num_points, num_labels)) < 0.3).astype(np.float64))
    return X, Y
