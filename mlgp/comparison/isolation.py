"""Fitting and scoring one family of a comparison, in this process (:func:`run_one`) or in a fresh
Python process of its own (:func:`run_isolated`, through :mod:`mlgp.comparison.worker`).

Either way the result is a row (``family``, ``estimator``, ``settings``, ``error``, ``chosen`` where the
fitted estimator made a choice of its own (MLGPF's ``kernel_choice_``: :func:`_chosen_text`), the fit and predict
seconds, the peak memory, P@k, nDCG@k and PSP@k for k in :data:`KS` up to the number of labels, the
columns of :mod:`mlgp.comparison.probabilities`, the reliability bins under ``_reliability`` and, for
a family that ran, each test row's P@1, P@5 and log predictive density under ``_rows``
(:mod:`mlgp.comparison.rows`; ``{measure: [N_test values]}``, lists so that the row stays JSON)) and
a trace frame (:mod:`mlgp.comparison.traces`). A family that raises is a row whose ``error`` is the
exception's first line (``traceback`` holds the last frames). A worker process that ends without a
result — killed by a signal (the out-of-memory killer's SIGKILL, a SIGTERM) or exiting early — is a
row whose ``error`` names the signal's number and name, or the exit status.

A family that uses TensorFlow (:func:`mlgp.families.uses_tensorflow`) has it imported first, without
its start-up lines (:func:`mlgp.quiet.quiet_tensorflow`), unless the user chose TensorFlow's logging
(``TF_CPP_MIN_LOG_LEVEL``, which ``mlgp --verbose`` sets and a worker inherits): the library is
quiet by itself, and no argument asks for it.

Warnings raised while a family is fitted and scored are caught there (in the worker, too) and kept
in the row under ``_warnings`` (``[{"category": "module:Name", "message": text}]``, each once);
:func:`relay_warnings` raises them again in the calling process, so that its filters and its way of
showing warnings apply (the ``mlgp`` command's: one line each, :func:`mlgp.errors.one_line_warnings`).
"""

from __future__ import annotations

import json
import signal
import sys
import time
import traceback
import warnings
from pathlib import Path

import pandas as pd

from ..errors import warn
from ..families import family, fit_arguments, uses_tensorflow
from ..quiet import quiet_tensorflow
from .probabilities import probability_row
from .rows import ranking_rows
from .traces import empty_trace, trace_of

__all__ = ["KS", "relay_warnings", "run_isolated", "run_one"]

#: The cut-offs of P@k, nDCG@k and PSP@k (those up to the number of labels).
KS = (1, 3, 5)


def _caught(records: list) -> list[dict]:
    """Each distinct warning of ``records`` (:class:`warnings.WarningMessage`) as
    ``{"category": "module:Name", "message": text}``, in the order first raised."""
    out = []
    for record in records:
        entry = {"category": f"{record.category.__module__}:{record.category.__qualname__}",
                 "message": str(record.message)}
        if entry not in out:
            out.append(entry)
    return out


def relay_warnings(caught: list[dict] | None) -> None:
    """Raise again in this process the warnings a family raised (the row's ``_warnings``), each with
    its own category where its module is loaded here (else :class:`UserWarning`), from the line that
    called into mlgp (:func:`mlgp.errors.warn`)."""
    for entry in caught or []:
        module, _, name = str(entry.get("category", "")).partition(":")
        try:
            category = sys.modules[module]
            for part in name.split("."):
                category = getattr(category, part)
        except (KeyError, AttributeError):
            category = UserWarning
        if not (isinstance(category, type) and issubclass(category, Warning)):
            category = UserWarning
        warn(str(entry.get("message", "")), category)


def _settings_text(estimator) -> str:
    """The parameters that differ from the class's defaults, ``name=value`` separated by ``; ``
    (``"defaults"`` when none does)."""
    defaults = type(estimator)().get_params(deep=False)
    changed = {k: v for k, v in estimator.get_params(deep=False).items() if repr(defaults.get(k)) != repr(v)}
    return "; ".join(f"{k}={v!r}" for k, v in changed.items()) or "defaults"


def _chosen_text(choice) -> str:
    """What a fitted estimator chose and why, as text: MLGPF's ``kernel_choice_`` (one row per
    candidate kernel, its held-out density and whether it was chosen) as ``"kernel linear
    (held-out LPD -3.514; se+linear-shared -3.694, se -3.741)"``; ``""`` for None or no rows."""
    if choice is None or len(choice) == 0:
        return ""
    won = choice[choice["chosen"]]
    if len(won) != 1:
        return ""
    others = ", ".join(f"{k} {lpd:.3f}" for k, lpd in zip(choice.loc[~choice["chosen"], "kernel"],
                                                          choice.loc[~choice["chosen"], "held_out_lpd"]))
    text = f"kernel {won['kernel'].iloc[0]} (held-out LPD {won['held_out_lpd'].iloc[0]:.3f}"
    return text + (f"; {others})" if others else ")")


def _ending(returncode: int) -> str:
    """How a process that left no result ended: ``"killed by signal 9 (SIGKILL)"`` or ``"exit status 3"``.

    Parameters
    ----------
    returncode : int
        :attr:`subprocess.CompletedProcess.returncode` (negative: the number of the signal that killed it).
    """
    if returncode >= 0:
        return f"exit status {returncode}"
    number = -returncode
    try:
        return f"killed by signal {number} ({signal.Signals(number).name})"
    except ValueError:
        return f"killed by signal {number}"


def run_isolated(name: str, estimator, ds, inv_propensity, progress: bool) -> tuple[dict, pd.DataFrame]:
    """:func:`run_one` in a fresh Python process (:mod:`mlgp.comparison.worker`).

    Parameters
    ----------
    name, estimator, ds, inv_propensity, progress
        As :func:`run_one`.

    Returns
    -------
    tuple of (dict, pandas.DataFrame)
        The worker's row and trace; when the worker left none, a row whose ``error`` says how it
        ended (:func:`_ending`) and an empty trace.
    """
    import pickle
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mlgp-compare-") as tmp:
        folder = Path(tmp)
        (folder / "job.pickle").write_bytes(pickle.dumps((name, estimator, ds, inv_propensity, progress)))
        done = subprocess.run([sys.executable, "-m", "mlgp.comparison.worker", str(folder)], check=False)
        if (folder / "row.json").is_file():
            row = json.loads((folder / "row.json").read_text())
            trace = pd.read_csv(folder / "trace.csv", dtype={"family": str, "quantity": str})
            return row, trace if len(trace) else empty_trace()
    row = {"family": name, "estimator": type(estimator).__name__, "settings": _settings_text(estimator),
           "error": f"the fitting process ended without a result ({_ending(done.returncode)}; out of memory?)"}
    return row, empty_trace()


def run_one(name: str, estimator, ds, inv_propensity, progress: bool) -> tuple[dict, pd.DataFrame]:
    """Fit and score one family in this process; any exception becomes the row's ``error``.

    Parameters
    ----------
    name : str
        The family's name.
    estimator
        Its unfitted estimator (fitted in place).
    ds : mlgp.data.Dataset
        The split: fitted on ``ds.train``, scored on ``ds.test``.
    inv_propensity : numpy.ndarray
        Inverse label propensities of PSP@k.
    progress : bool
        Show the family's progress bar, where it has one.

    Returns
    -------
    tuple of (dict, pandas.DataFrame)
        The row (with ``_rows`` when it ran, ``_warnings`` when a warning was raised) and the trace
        frame.
    """
    row = {"family": name, "estimator": type(estimator).__name__, "settings": _settings_text(estimator), "error": ""}
    with warnings.catch_warnings(record=True) as records:
        trace = _fit_and_score(name, estimator, ds, inv_propensity, progress, row)
    if records:
        row["_warnings"] = _caught(records)
    return row, trace


def _fit_and_score(name: str, estimator, ds, inv_propensity, progress: bool, row: dict) -> pd.DataFrame:
    """:func:`run_one`'s work: fill ``row`` in place and return the trace frame."""
    from sklearn import config_context

    from ..metrics import evaluate
    from .memory import PeakMemory

    K = ds.train.Y.shape[1]
    ks = [k for k in KS if k <= K]
    try:
        if uses_tensorflow(estimator):  # TensorFlow up first, without its start-up lines, unless the user chose
            quiet_tensorflow()  # (mlgp.quiet; in a worker too, which inherits the user's choice)
        validation = (ds.test.X, ds.test.Y) if family(name).validation else None
        kwargs = fit_arguments(estimator, progress, validation)
        with PeakMemory() as memory, config_context(skip_parameter_validation=True):
            # make_estimator checked the parameters, once: fit trusts them
            t0 = time.perf_counter()
            estimator.fit(ds.train.X, ds.train.Y, **kwargs)
            row["fit_seconds"] = time.perf_counter() - t0
        chosen = _chosen_text(getattr(estimator, "kernel_choice_", None))
        if chosen:
            row["chosen"] = chosen
        row["peak_memory_mb"] = memory.peak_mb
        t0 = time.perf_counter()
        top = estimator.predict_topk(ds.test.X, max(ks))
        row["predict_seconds"] = time.perf_counter() - t0
        table = evaluate(ds.test.Y, top, ks=ks, inv_propensity=inv_propensity)
        for metric in ("P", "nDCG", "PSP"):
            row.update({f"{metric}@{k}": float(table.loc[metric, k]) for k in ks})
        per_row = ranking_rows(ds.test.Y, top, inv_propensity)
        probabilities, row["_reliability"] = probability_row(estimator, ds.test.X, ds.test.Y, rows=per_row)
        row.update(probabilities)
        trace = trace_of(name, estimator)
        row["_rows"] = {measure: values.tolist() for measure, values in per_row.items()}
    except Exception as err:  # noqa: BLE001 - a family that fails is recorded and the others go on
        row["error"] = f"{type(err).__name__}: {err}".splitlines()[0]
        row["traceback"] = traceback.format_exc(limit=5)
        trace = empty_trace()
    return trace
