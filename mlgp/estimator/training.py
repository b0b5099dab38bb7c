"""What every family that trains in steps shares: one time budget and one trace.

:class:`Budget` is the meaning of ``max_seconds`` in every family: wall seconds counted from the
start of ``fit`` (validation, set-up and compilation included), looked at after every training
step (an optimiser step of MLGPF, an EM iteration, an online-EM minibatch, a Gibbs sweep, a tree of
the FastXML family), so that a fit overruns its bound by at most one step and always takes at least
one. The clock is read once per look, through this module's ``perf_counter`` (a test replaces it
with a fake clock).

:func:`common_trace` gives a family's ``trace_`` its one form: every row holds ``step`` (training
steps so far), ``elapsed`` (seconds since ``fit`` began, at the budget's last look) and
``objective`` (the family's training objective per training point: MLGPF's ELBO, EM's log
posterior, the Gibbs draw's log joint), then the family's own columns (``P@k`` of a validation set,
...). :data:`TRACE_COLUMNS` are the columns every trace starts with; ``mlgp compare`` reads them
without knowing the family.
"""

from __future__ import annotations

import math
from numbers import Real
from time import perf_counter

import numpy as np
import pandas as pd

from sklearn.utils._param_validation import Interval

from .. import arguments
from ..errors import BudgetWarning, warn

__all__ = ["Budget", "MAX_SECONDS", "TRACE_COLUMNS", "common_trace"]

#: The columns every family's ``trace_`` starts with.
TRACE_COLUMNS = ("step", "elapsed", "objective")


class _Seconds(Interval):
    """scikit-learn's interval (0, inf) of reals (its message), satisfied by exactly what
    :func:`mlgp.arguments.is_seconds` accepts (no boolean, no inf)."""

    def __init__(self) -> None:
        super().__init__(Real, 0, None, closed="neither")

    def is_satisfied_by(self, val) -> bool:
        return val is not None and arguments.is_seconds(val)


#: The parameter constraint of ``max_seconds`` in every family that has one: the one rule of a
#: budget (:func:`mlgp.arguments.is_seconds`: a finite number > 0, not a boolean, or ``None``). It is
#: the one check: ``fit`` makes its budget with :meth:`Budget.trusted`.
MAX_SECONDS = [_Seconds(), None]


class Budget:
    """Wall seconds of one fit, counted from when the budget is made (the start of ``fit``).

    Parameters
    ----------
    seconds : float or None
        The bound, checked by the one rule of a budget (:func:`mlgp.arguments.max_seconds`: a
        finite number > 0); ``None``: no bound (``seconds`` is then ``inf``; the clock is still
        read, for the trace).

    Examples
    --------
    >>> budget = Budget(None)
    >>> budget.spent(), budget.seconds
    (False, inf)
    """

    def __init__(self, seconds: float | None = None) -> None:
        self._start(arguments.max_seconds(seconds))

    @classmethod
    def trusted(cls, seconds: float | None, started: float | None = None) -> "Budget":
        """A budget of ``seconds`` that its caller has checked, not checked again: an estimator's
        ``max_seconds``, which its parameter constraints checked when ``fit`` began (or which a
        caller that checked them, like :func:`mlgp.families.make_estimator`, told it to trust).
        ``started``: the ``perf_counter()`` it counts from (default: now), for a ``fit`` whose
        parameter checks ran before the budget could be made."""
        budget = cls.__new__(cls)
        budget._start(seconds, started)
        return budget

    @staticmethod
    def now() -> float:
        """The budgets' clock (``time.perf_counter``): a ``started`` for :meth:`trusted`."""
        return perf_counter()

    def _start(self, seconds: float | None, started: float | None = None) -> None:
        self.seconds = math.inf if seconds is None else float(seconds)
        self.started = perf_counter() if started is None else float(started)
        self.elapsed = 0.0

    def spent(self) -> bool:
        """Look at the clock (once): whether the bound is reached. Updates :attr:`elapsed`."""
        self.elapsed = perf_counter() - self.started
        return self.elapsed >= self.seconds

    def warn_if_first_step_spent(self, steps: int, fitted: str, kept: str) -> None:
        """A :class:`~mlgp.errors.BudgetWarning` naming ``fitted`` (the estimator) and what it kept
        (``kept``) when training took at most one step and the bound was reached at the last look."""
        if steps <= 1 and self.elapsed >= self.seconds:
            warn(f"{fitted}: max_seconds={self.seconds:g} was spent by the end of the first training step "
                 f"({self.elapsed:.3g} s, set-up included): {kept}", BudgetWarning)

    @classmethod
    def of(cls, value: "Budget | float | None") -> "Budget":
        """``value`` if it is a budget already (started by a caller), else a new one started now."""
        return value if isinstance(value, Budget) else cls(value)

    def __repr__(self) -> str:
        return f"Budget(seconds={self.seconds}, elapsed={self.elapsed:.3g})"


def common_trace(trace: pd.DataFrame, num_points: int, *, step: str | None, total: str) -> pd.DataFrame:
    """A family's own trace with :data:`TRACE_COLUMNS` first, the one form every ``trace_`` has.

    ``step``: the column counting training steps (``None``: the row number); ``total``: the column
    holding the objective summed over the ``num_points`` training points (kept), whose per-point
    value becomes ``objective``. ``elapsed`` is kept where the family recorded it (a budget's
    seconds at the row's last step), else the running sum of the steps' ``seconds``.
    """
    out = trace.copy()
    out["step"] = out[step].astype(int) if step is not None else np.arange(1, len(out) + 1)
    values = out[total].astype(float)
    if total == "objective":
        out = out.rename(columns={"objective": "log_posterior"})
    out["objective"] = values / max(int(num_points), 1)
    if "elapsed" not in out or out["elapsed"].isna().all():
        out["elapsed"] = out["seconds"].cumsum()
    return out[list(TRACE_COLUMNS) + [c for c in out.columns if c not in TRACE_COLUMNS]].reset_index(drop=True)
