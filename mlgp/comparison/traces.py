"""The traces of a comparison (:func:`mlgp.compare`): what a family that trains in steps recorded
per step, in long form.

A trace frame has the columns :data:`TRACE_COLUMNS`: ``family``, ``step`` (the epoch or EM
iteration), ``seconds`` (since the fit began), ``quantity`` (``elbo_per_point``: MLGPF's ELBO per
training point; ``log_posterior_per_point``: GenEML's log posterior per training point; ``P@k``: the
test P@k after the step) and ``value``. :func:`_trace_of` makes one from a fitted estimator's
``trace_``; :func:`_thinned` keeps at most :data:`MAX_TRACE_STEPS` steps of it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["MAX_TRACE_STEPS", "TRACE_COLUMNS"]

#: At most this many steps of a family's trace are kept (evenly spaced, the first and last among them).
MAX_TRACE_STEPS = 500
#: The columns of a trace frame, in order.
TRACE_COLUMNS = ("family", "step", "seconds", "quantity", "value")


def _empty_trace() -> pd.DataFrame:
    """A trace frame without rows (the columns of :data:`TRACE_COLUMNS` with their dtypes)."""
    return pd.DataFrame({"family": pd.Series(dtype=str), "step": pd.Series(dtype=int),
                         "seconds": pd.Series(dtype=float), "quantity": pd.Series(dtype=str),
                         "value": pd.Series(dtype=float)})


def _thinned(trace: pd.DataFrame) -> pd.DataFrame:
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


def _trace_of(name: str, estimator, num_train: int) -> pd.DataFrame:
    """The fitted estimator's ``trace_`` in long form (empty for families without one).

    Parameters
    ----------
    name : str
        The family's name (the ``family`` column).
    estimator
        The fitted estimator.
    num_train : int
        Training rows: GenEML's ``objective`` (its log posterior) is divided by it.

    Returns
    -------
    pandas.DataFrame
        A trace frame (:data:`TRACE_COLUMNS`).
    """
    trace = getattr(estimator, "trace_", None)
    if trace is None or len(trace) == 0:
        return _empty_trace()
    seconds = trace["elapsed"] if "elapsed" in trace else trace["seconds"].cumsum()
    step = trace["epoch"] if "epoch" in trace else trace["iteration"] if "iteration" in trace else \
        pd.Series(np.arange(1, len(trace) + 1))
    quantities = {}
    if "elbo_per_point" in trace:
        quantities["elbo_per_point"] = trace["elbo_per_point"]
    if "objective" in trace:
        quantities["log_posterior_per_point"] = trace["objective"] / num_train
    quantities.update({c: trace[c] for c in trace.columns if c.startswith("P@")})
    parts = [pd.DataFrame({"family": name, "step": np.asarray(step, dtype=int), "seconds": np.asarray(seconds, float),
                           "quantity": q, "value": np.asarray(v, dtype=float)}) for q, v in quantities.items()]
    return pd.concat(parts, ignore_index=True) if parts else _empty_trace()
