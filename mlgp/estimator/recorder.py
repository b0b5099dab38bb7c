"""One recorder of training steps for every family that trains in steps, and the one validation pair.

A training loop — MLGPF's epochs (:func:`mlgp.training.fit`), GenEML's batch-EM iterations, online-EM
epochs and Gibbs sweeps (:mod:`mlgp.geneml`) — keeps its own numerics and leaves the rest of each
step to a :class:`StepRecorder`:

1. :meth:`~StepRecorder.begin_step` starts the step's own clock;
2. the loop works, calling :meth:`~StepRecorder.look` after each of its smaller steps when it has
   any (MLGPF's optimiser steps, online EM's minibatches: the budget is looked at once after each);
3. :meth:`~StepRecorder.end_step` stops the step's own clock and, unless the step looked already,
   looks at the :class:`~mlgp.estimator.budget.Budget` (once), so the clock is read once per
   step, before the objective is evaluated;
4. :meth:`~StepRecorder.record` makes the trace row in the loop's column order — the loop's values,
   ``elapsed`` (the budget's seconds at its last look; NaN without a budget) and ``seconds`` (the
   step's own, without the objective's evaluation) — adds the validation measure (``P@k`` of the
   held-out pair, :func:`validation_precision`) and appends it to :attr:`~StepRecorder.rows`;
5. :meth:`~StepRecorder.stop` calls the callback and says whether to stop: the budget spent at the
   last look, the callback asking (a true return), or the objective's change within the tolerance
   (:func:`converged`); :attr:`~StepRecorder.stopped_by` names which.

The callback has one signature in every loop: ``callback(step, state, row)``, with ``step`` the
loop's count of its own steps (MLGPF's epoch, EM's iteration, online EM's epoch, the Gibbs sweep),
``state`` what the loop trains (the MLGPF model; GenEML's :class:`~mlgp.geneml.em.EMState`) and
``row`` the trace row as recorded, ``elapsed`` and validation ``P@k`` included, to which the
callback may add columns; a true return stops training.

:func:`checked_validation` is the one check of a validation pair ``(X_val, Y_val)`` for every entry
that takes one, giving a :class:`HeldOutPair`.

:func:`common_trace` gives a family's ``trace_`` its one form: every row holds ``step`` (training
steps so far), ``elapsed`` (seconds since ``fit`` began, at the budget's last look) and
``objective`` (the family's training objective per training point: MLGPF's ELBO, EM's log
posterior, the Gibbs draw's log joint), then the family's own columns. :data:`TRACE_COLUMNS` are
the columns every trace starts with; ``mlgp compare`` reads them without knowing the family.
No TensorFlow.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from ..errors import ArgumentError, ShapeError
from .budget import Budget

__all__ = ["DEFAULT_KS", "HeldOutPair", "StepRecorder", "TRACE_COLUMNS", "checked_validation", "common_trace", "converged",
           "validation_precision"]

#: The cut-offs of the validation ``P@k`` unless a caller names its own: those not above K.
DEFAULT_KS = (1, 3, 5)


def validation_precision(Y, ranking, ks) -> dict[str, float]:
    """``{"P@k": percent}`` for each k in ``ks``: precision at k of ``ranking`` (a
    :class:`~mlgp.scores.TopK` of at least ``max(ks)`` labels per row) against the 0/1 labels ``Y``.
    The one computation of the validation measure in every trace."""
    from ..metrics import precision_at_k
    from ..scores import topk

    return {f"P@{k}": 100.0 * precision_at_k(Y, topk(ranking, k), k) for k in ks}


@dataclass(frozen=True, eq=False)
class HeldOutPair:
    """A checked validation pair (:func:`checked_validation`): features ``X`` (CSR or dense float64,
    after the family's preprocessing where it has one), 0/1 labels ``Y`` (CSR) and the cut-offs ``ks``."""

    X: object
    Y: object
    ks: tuple[int, ...]

    def precision(self, ranking) -> dict[str, float]:
        """``{"P@k": percent}`` of ``ranking`` (a TopK of ``X``'s rows) for ``ks``."""
        return validation_precision(self.Y, ranking, self.ks)


def checked_validation(validation, *, num_features: int, num_labels: int, ks=None,
                       preprocess: Callable | None = None) -> HeldOutPair | None:
    """``validation`` = ``(X_val, Y_val)`` checked against the training data's D and K: the one
    check of a validation pair, for every entry that takes one. None stays None; a
    :class:`HeldOutPair` (checked already) is returned as it is.

    ``X_val`` is checked like the training features (finite, D columns), then given to
    ``preprocess`` (the family's preprocessing of its training rows) where there is one; ``Y_val``
    like the training labels (0/1, one row per point of ``X_val``, K columns). ``ks``: the cut-offs
    of ``P@k``, positive and at most K; ``None``: those of :data:`DEFAULT_KS` at most K.

    Raises :class:`~mlgp.errors.ArgumentError` when ``validation`` is not a pair or a cut-off is not
    a positive integer, :class:`~mlgp.errors.ShapeError` for features or labels that do not fit.
    """
    from .. import arguments
    from ..validation import check_features, check_labels

    if validation is None or isinstance(validation, HeldOutPair):
        return validation
    if not isinstance(validation, (tuple, list)) or len(validation) != 2:
        raise ArgumentError(f"validation must be a pair (X_val, Y_val), got {type(validation).__name__}"
                            + (f" of length {len(validation)}" if isinstance(validation, (tuple, list)) else ""))
    X, Y = validation
    X = check_features(X, "validation X", num_features=num_features)
    Y = check_labels(Y, "validation Y", num_points=X.shape[0], num_labels=num_labels)
    if ks is None:
        ks = tuple(k for k in DEFAULT_KS if k <= num_labels)
    else:
        ks = tuple(arguments.positive_int(k, "each k of validation_ks") for k in ks)
        if not ks or max(ks) > num_labels:
            raise ShapeError(f"validation_ks must name at least one cut-off, each at most K = {num_labels}; got {ks}")
    return HeldOutPair(preprocess(X) if preprocess is not None else X, Y, ks)


def converged(objectives: list, tol: float | None) -> bool:
    """Whether the last of ``objectives`` differs from the one before by at most ``tol`` times its
    size (never with ``tol`` None or fewer than two values)."""
    if tol is None or len(objectives) < 2:
        return False
    return abs(objectives[-1] - objectives[-2]) <= tol * abs(objectives[-1])


@dataclass(eq=False)
class StepRecorder:
    """The record of one training loop's steps (module docstring).

    Parameters
    ----------
    budget : Budget or None
        The fit's budget, looked at once per step; None: no clock is read, ``elapsed`` is NaN and
        the budget never stops the loop.
    columns : tuple of str
        The trace's columns in order; among them ``elapsed`` and ``seconds``, which the recorder
        fills, and ``step_column`` (default: the first).
    objective : str
        The column holding the objective, which the tolerance watches.
    validation, rank
        A :class:`HeldOutPair`, and ``rank(state, X, k)``: the TopK of ``X``'s ``k`` best labels by
        ``state``; each row gets ``P@k`` of the pair (none without one).
    callback
        ``callback(step, state, row)`` (module docstring), or None.
    tol
        Stop after the first step whose objective changed by at most ``tol`` times its size; None:
        never.
    rows
        The rows so far (restored ones, or a list the loop shares); the recorder appends to it.
    """

    budget: Budget | None
    columns: tuple[str, ...]
    step_column: str | None = None
    objective: str = "objective"
    validation: HeldOutPair | None = None
    rank: Callable | None = None
    callback: Callable | None = None
    tol: float | None = None
    rows: list = field(default_factory=list)
    spent: bool = False
    stopped_by: str | None = None
    _started: float = field(default=0.0, init=False, repr=False)
    _looked: bool = field(default=False, init=False, repr=False)
    _seconds: float = field(default=math.nan, init=False, repr=False)

    def __post_init__(self) -> None:
        self.step_column = self.step_column or self.columns[0]

    def begin_step(self) -> None:
        """The step starts: its own clock (not the budget's) starts here."""
        self._started = time.perf_counter()
        self._looked = False

    def look(self) -> bool:
        """One look at the budget's clock: whether it is spent (False, and no reading, without one)."""
        self._looked = True
        if self.budget is not None:
            self.spent = self.budget.spent()
        return self.spent

    def end_step(self) -> bool:
        """The step's work is done: its own seconds end here, and the budget is looked at unless the
        step looked after its last part. Whether the budget is spent."""
        self._seconds = time.perf_counter() - self._started
        return self.spent if self._looked else self.look()

    def record(self, state, values: dict) -> dict:
        """The step's trace row from the loop's ``values`` (every column but ``elapsed``, and
        ``seconds`` unless the loop times its steps itself), with the validation ``P@k`` at
        ``state``; appended to :attr:`rows` and returned."""
        row = {}
        for name in self.columns:
            if name == "elapsed":
                row[name] = self.budget.elapsed if self.budget is not None else math.nan
            elif name == "seconds" and "seconds" not in values:
                row[name] = self._seconds
            else:
                row[name] = values[name]
        if self.validation is not None:
            row.update(self.validation.precision(self.rank(state, self.validation.X, max(self.validation.ks))))
        self.rows.append(row)
        return row

    def stop(self, state, row: dict) -> bool:
        """Call the callback with ``(step, state, row)`` and say whether to stop after this step: the
        budget spent at the last look, the callback asking, or the tolerance met
        (:attr:`stopped_by`: ``"budget"``, ``"callback"``, ``"tolerance"`` or None)."""
        asked = self.callback is not None and bool(self.callback(row[self.step_column], state, row))
        self.stopped_by = None
        if self.spent:
            self.stopped_by = "budget"
        elif asked:
            self.stopped_by = "callback"
        elif converged([r[self.objective] for r in self.rows], self.tol):
            self.stopped_by = "tolerance"
        return self.stopped_by is not None

    def trace(self):
        """The rows as a ``pandas.DataFrame`` (the columns alone when there are none)."""
        import pandas as pd

        return pd.DataFrame(self.rows, columns=None if self.rows else list(self.columns))

#: The columns every family's ``trace_`` starts with.
TRACE_COLUMNS = ("step", "elapsed", "objective")


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
