"""The one time budget of every family that trains in steps: :class:`Budget`.

:class:`Budget` is the meaning of ``max_seconds`` in every family: wall seconds counted from the
start of ``fit`` (validation, set-up and compilation included), looked at after every training
step (an optimiser step of MLGPF, an EM iteration, an online-EM minibatch, a Gibbs sweep, a tree of
the FastXML family), so that a fit overruns its bound by at most one step and always takes at least
one. The clock is read once per look, through this module's ``perf_counter`` (a test replaces it
with a fake clock).

"""

from __future__ import annotations

import math
from numbers import Real
from time import perf_counter


from sklearn.utils._param_validation import Interval

from .. import arguments
from ..errors import BudgetWarning, warn

__all__ = ["Budget", "MAX_SECONDS"]



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
