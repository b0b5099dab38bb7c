"""What every family that trains in steps shares: one time budget and one trace.

:class:`Budget` is the meaning of ``max_seconds`` in every family: wall seconds counted from the
start of ``fit`` (validation, set-up and compilation included), looked at after every training
step (an optimiser step of MLGPF, an EM iteration, an online-EM minibatch, a Gibbs sweep, a tree of
the FastXML family), so that a fit overruns its bound by at most one step and always takes at least
one. The clock is read once per look, through this module's ``perf_counter`` (a test replaces it
with a fake clock).

:class:`TraceRecorder` writes the rows of a family's ``trace_``: every row holds ``step`` (training
steps so far), ``elapsed`` (seconds since ``fit`` began, at the budget's last look) and
``objective`` (the family's training objective per training point: MLGPF's ELBO, EM's log
posterior, the Gibbs draw's log joint), then the family's own columns (``P@k`` of a validation set,
the probabilistic metrics, ...). :data:`TRACE_COLUMNS` are the columns every trace starts with;
``mlgp compare`` reads them without knowing the family.
"""

from __future__ import annotations

import math
from numbers import Real
from time import perf_counter

import pandas as pd

from ..errors import ArgumentError

__all__ = ["Budget", "TRACE_COLUMNS", "TraceRecorder"]

#: The columns every family's ``trace_`` starts with.
TRACE_COLUMNS = ("step", "elapsed", "objective")


class Budget:
    """Wall seconds of one fit, counted from when the budget is made (the start of ``fit``).

    Parameters
    ----------
    seconds : float or None
        The bound; ``None`` or ``inf``: no bound (the clock is still read, for the trace).

    Examples
    --------
    >>> budget = Budget(None)
    >>> budget.spent(), budget.seconds
    (False, inf)
    """

    def __init__(self, seconds: float | None = None) -> None:
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, Real)
                                    or math.isnan(seconds) or seconds <= 0):
            raise ArgumentError(f"max_seconds must be a positive number or None, got {seconds!r}")
        self.seconds = math.inf if seconds is None else float(seconds)
        self.started = perf_counter()
        self.elapsed = 0.0

    def spent(self) -> bool:
        """Look at the clock (once): whether the bound is reached. Updates :attr:`elapsed`."""
        self.elapsed = perf_counter() - self.started
        return self.elapsed >= self.seconds

    @classmethod
    def of(cls, value: "Budget | float | None") -> "Budget":
        """``value`` if it is a budget already (started by a caller), else a new one started now."""
        return value if isinstance(value, Budget) else cls(value)

    def __repr__(self) -> str:
        return f"Budget(seconds={self.seconds}, elapsed={self.elapsed:.3g})"


class TraceRecorder:
    """The rows of a ``trace_``: :data:`TRACE_COLUMNS` first, then the family's own columns.

    Parameters
    ----------
    num_points : int
        Training points the objective is divided by (the objective is recorded per point).
    budget : Budget
        Whose last look gives each row's ``elapsed``.
    extra : sequence of str
        The family's own columns, in order (an empty trace still has them).
    """

    def __init__(self, num_points: int, budget: Budget, extra: tuple[str, ...] = ()) -> None:
        self.num_points = max(int(num_points), 1)
        self.budget = budget
        self.extra = tuple(extra)
        self.rows: list[dict] = []

    def record(self, step: int, objective: float, **values) -> dict:
        """Add a row after training step ``step`` (the budget looked at just before); ``objective``
        is the total over the training points. Returns the row."""
        row = {"step": int(step), "elapsed": float(self.budget.elapsed),
               "objective": float(objective) / self.num_points, **values}
        self.rows.append(row)
        return row

    def frame(self) -> pd.DataFrame:
        """The trace: one row per :meth:`record`, :data:`TRACE_COLUMNS` first."""
        columns = list(TRACE_COLUMNS) + list(self.extra)
        for row in self.rows:
            columns += [c for c in row if c not in columns]
        return pd.DataFrame(self.rows, columns=columns)
