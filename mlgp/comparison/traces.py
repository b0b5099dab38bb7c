"""The traces of a comparison (:func:`mlgp.compare`): what a family that trains in steps recorded
per step, in long form.

A trace frame has the columns :data:`TRACE_COLUMNS`: ``family``, ``step`` (training steps so far:
optimiser steps, EM iterations, online-EM minibatches, Gibbs sweeps), ``seconds`` (since the fit
began), ``quantity`` (``objective``: the family's training objective per training point — MLGPF's
ELBO, GenEML's log posterior; ``P@k``: the test P@k after the step) and ``value``. :func:`trace_of` makes one from a fitted estimator's
``trace_``; :func:`thinned` keeps at most :data:`MAX_TRACE_STEPS` steps of it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["MAX_TRACE_STEPS", "TRACE_COLUMNS", "empty_trace", "thinned", "trace_of"]

#: At most this many steps of a family's trace are kept (evenly spaced, the first and last among them).
MAX_TRACE_STEPS = 500
#: The columns of a trace frame, in order.
TRACE_COLUMNS = ("family", "step", "seconds", "quantity", "value")


def empty_trace() -> pd.DataFrame:
    """A trace frame without rows (the columns of :data:`TRACE_COLUMNS` with their dtypes)."""
    return pd.DataFrame({"family": pd.Series(dtype=str), "step": pd.Series(dtype=int),
                         "seconds": pd.Series(dtype=float), "quantity": pd.Series(dtype=str),
                         "value": pd.Series(dtype=float)})



def thinned(trace: pd.DataFrame) -> pd.DataFrame:
    """``trace`` with at most :data:`MAX_TRACE_STEPS` of its steps (a family with many short epochs,
    MLGPF on a few hundred points, records thousands).

    Parameters
    ----------
    trace : pandas.DataFrame
        One family's trace frame.

    Returns
    -------
    pandas.DataFrame
        ``trace`` itself when it has few enough steps, else the rows of evenly spaced steps.
    """
    steps = np.unique(trace["step"].to_numpy())
    if steps.size <= MAX_TRACE_STEPS:
        return trace
    kept = steps[np.unique(np.linspace(0, steps.size - 1, MAX_TRACE_STEPS).round().astype(int))]
    return trace[trace["step"].isin(kept)].reset_index(drop=True)


def trace_of(name: str, estimator) -> pd.DataFrame:
    """The fitted estimator's ``trace_`` in long form (empty for families without one).

    Every family that trains in steps writes its ``trace_`` in the one form of
    :mod:`mlgp.estimator.budget` (``step``, ``elapsed``, ``objective`` per training point, then
    ``P@k`` of a validation set among its own columns), so nothing here knows the family.

    Parameters
    ----------
    name : str
        The family's name (the ``family`` column).
    estimator
        The fitted estimator.

    Returns
    -------
    pandas.DataFrame
        A trace frame (:data:`TRACE_COLUMNS`).
    """
    trace = getattr(estimator, "trace_", None)
    if trace is not None and "step" in trace:
        trace = trace[trace["step"] > 0]  # MLGPF's set-up row (step 0) has no objective
    if trace is None or len(trace) == 0:
        return empty_trace()
    quantities = {"objective": trace["objective"], **{c: trace[c] for c in trace.columns if c.startswith("P@")}}
    parts = [pd.DataFrame({"family": name, "step": trace["step"].to_numpy(dtype=int),
                           "seconds": trace["elapsed"].to_numpy(dtype=float), "quantity": q,
                           "value": np.asarray(v, dtype=float)}) for q, v in quantities.items()]
    return pd.concat(parts, ignore_index=True)
