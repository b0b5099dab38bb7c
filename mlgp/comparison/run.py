"""One comparison of model families on one split: :func:`compare`, the Python twin of ``mlgp compare``.

Contract: every argument is checked, and every family named (:data:`mlgp.comparison.FAMILIES`) built
and checked, before any data are read or any fitting (:mod:`mlgp.comparison.checks`: a wrong-typed
argument, an unknown family or parameter, a value outside its constraints, a family named twice or
a budget that is not a finite number of seconds > 0 raise :class:`~mlgp.errors.ArgumentError`); then
each family is fitted in turn on the same training split — within ``budget`` wall seconds where the family has a budget (MLGPF, GenEML: training stops after
the epoch or EM iteration that ends past it; the trees and LSPC have none) — and scored on the test
split (:mod:`mlgp.comparison.isolation`): P@1/3/5, nDCG@1/3/5 and PSP@1/3/5 (percent; propensities
from the training labels), the probability columns of :mod:`mlgp.comparison.probabilities` (empty
with a ``proba_note`` for a family without probabilities), fit and predict seconds, and the peak
resident memory of the fitting process and its workers (:mod:`mlgp.comparison.memory`; each family
is fitted in a fresh process unless ``isolate=False``, so the figure is its own). Families that train
in steps record their trace against seconds (:mod:`mlgp.comparison.traces`: MLGPF's ELBO, GenEML's
log posterior, both per training point, and test P@1/3/5 per step). A family that fails is recorded
with its error and the others go on. With ``out``, each finished family is written at once to
``out/runs/<family>.json`` with what it was run with (its parameters, the budget, the seed and a
fingerprint of the data); a later call with the same ``out`` takes a family's result from there
instead of refitting it when all of these match, the family did not fail and the file is whole
(:mod:`mlgp.comparison.resume`), so a killed run resumes; each test row's P@k, nDCG@k, PSP@k and log
predictive density are kept beside it in ``out/runs/<family>.rows.npz`` (:mod:`mlgp.comparison.rows`).
The results also hold, after the families named, every other family with a whole run file in
``out/runs/`` made on the same data with the same seed and budget (:attr:`Comparison.earlier`), so a
call naming fewer families reports every valid run. The budget is part of a family's key only
where the family takes one. Warnings a family raises while it is fitted and scored are raised again
in this process, once each, from the caller of :func:`compare`
(:func:`mlgp.comparison.isolation.relay_warnings`). The tables and figures are written by
:mod:`mlgp.comparison.report`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from ..errors import ArgumentError
from ..families import family
from .checks import check_read_options, checked_families, checked_out, quiet_tensorflow_deprecated
from .isolation import KS, relay_warnings, run_isolated, run_one
from .resume import finished_run, record_run, run_file
from .traces import empty_trace, thinned

__all__ = ["Comparison", "compare"]

#: The first columns of ``results``, in order; then P@k, nDCG@k and PSP@k, the probability columns,
#: and :data:`_LAST`.
_FIRST = ("family", "estimator", "settings", "error", "fit_seconds", "peak_memory_mb", "predict_seconds")
_LAST = ("proba_note", "traceback", "resumed")


@dataclass
class Comparison:
    """What :func:`compare` returns.

    Attributes
    ----------
    results : pandas.DataFrame
        One row per family, the columns always in this order: ``family``, ``estimator``,
        ``settings`` (the parameters that differ from the class's defaults, as text, or
        ``"defaults"``), ``error`` (empty when it ran), ``fit_seconds``, ``peak_memory_mb`` (the
        peak resident memory of the fitting process and its workers during the fit, MiB),
        ``predict_seconds``, ``P@k``, ``nDCG@k``, ``PSP@k`` (k = 1, 3, 5; percent), the probability
        columns, ``proba_note`` and ``traceback`` where a family has one, and ``resumed`` (taken
        from an earlier run's files).
    traces : pandas.DataFrame
        Long form, one row per family, step and quantity: ``family``, ``step``, ``seconds`` (since
        the fit began), ``quantity`` (``objective`` per training point, ``P@1`` …)
        and ``value``; at most :data:`~mlgp.comparison.traces.MAX_TRACE_STEPS` steps per family,
        evenly spaced.
    reliability : pandas.DataFrame
        The reliability bins of each family with probabilities: ``family``, ``entries`` (``"all"``
        entries, or ``"top5"``: each point's 5 most probable labels), ``mean_probability``,
        ``frequency`` and ``count``, one row per non-empty equal-mass bin.
    rows : dict of str to dict of str to numpy.ndarray
        Per family that ran, each test row's values (:mod:`mlgp.comparison.rows`): ``"P@k"``,
        ``"nDCG@k"``, ``"PSP@k"`` (k ≤ K; fractions) and ``"LPD"`` (with probabilities; nats), each
        (N_test,).
    earlier : list of str
        The families not named by the call whose rows were taken from whole earlier runs in
        ``out/runs/`` (same data, seed and budget); they come last in ``results``.
    """

    results: pd.DataFrame
    traces: pd.DataFrame
    reliability: pd.DataFrame = None
    rows: dict = None
    earlier: list = None

    def __post_init__(self) -> None:
        if self.reliability is None:
            self.reliability = _reliability_frame({})
        if self.rows is None:
            self.rows = {}
        if self.earlier is None:
            self.earlier = []


def _config(name: str, estimator, budget, seed, fingerprint: str) -> dict:
    """What family ``name`` is run with: the key of its run file (:mod:`mlgp.comparison.resume`)."""
    return {"family": name, "class": type(estimator).__name__,
            "params": {k: repr(v) for k, v in sorted(estimator.get_params(deep=False).items())},
            "budget": _key_budget(name, budget), "seed": None if seed is None else int(seed), "data": fingerprint}


def _key_budget(name: str, budget) -> float | None:
    """The budget in family ``name``'s key: ``None`` for a family without one (its run holds whatever
    the budget)."""
    return None if budget is None or not family(name).budget else float(budget)


def _earlier_runs(out: Path | None, named: list[str], budget, seed, fingerprint: str, test_shape: tuple[int, int],
                  echo: Callable[[str], None]) -> list[tuple[dict, pd.DataFrame, dict]]:
    """The rows, traces and per-row values of the whole runs in ``out/runs/`` of families not in
    ``named``, made on the data ``fingerprint`` with this ``seed`` and ``budget``, by family name."""
    import json

    from ..errors import MLGPError

    found = []
    if out is None or not (out / "runs").is_dir():
        return found
    for path in sorted((out / "runs").glob("*.json")):
        name = path.stem
        try:
            family(name)
            config = json.loads(path.read_text(encoding="utf-8"))["config"]
            key = (config["data"], config["seed"], config["budget"])
        except (MLGPError, OSError, ValueError, TypeError, KeyError):
            continue  # not a family's run file, or a broken one: not this call's to judge
        if name in named or key != (fingerprint, None if seed is None else int(seed), _key_budget(name, budget)):
            continue
        earlier = finished_run(out, name, config, test_shape[1], test_shape[0])
        if earlier.result is not None:
            echo(f"{name}: taken from {path} (an earlier run on this split, not among the families named)")
            row, trace, values = earlier.result
            row["resumed"] = True
            found.append((row, trace, values))
    return found


def _dataset(dataset, train, test, data_format, data_home, read_options: dict):
    """The split to compare on: a loaded dataset, one of the data home, or two labelled files (read
    with ``read_options``)."""
    from ..data.registry import Dataset, Split

    if isinstance(dataset, Dataset):
        ds = dataset
    elif dataset is not None:
        from ..data import load

        ds = load(dataset, data_home)
    else:
        if train is None or test is None:
            raise ArgumentError("compare needs a dataset, or both a train and a test file")
        import inspect

        from ..data.io import read_labelled

        known = set(inspect.signature(read_labelled).parameters) - {"path", "format", "num_features", "num_labels"}
        if set(read_options) - known:
            raise ArgumentError(f"read_options: {', '.join(sorted(set(read_options) - known))} is not a keyword of "
                                f"read_labelled; it takes {', '.join(sorted(known))}")
        Xtr, Ytr = read_labelled(train, data_format, **read_options)
        Xte, Yte = read_labelled(test, data_format, num_features=Xtr.shape[1], num_labels=Ytr.shape[1],
                                 **read_options)
        ds = Dataset(Path(train).name, Split("train", Xtr, Ytr, Path(train)), Split("test", Xte, Yte, Path(test)))
    if ds.train.Y.nnz == 0:
        raise ArgumentError(f"{ds.name}: the training data have no labels")
    return ds


def compare(models, *, dataset=None, train=None, test=None, data_format: str | None = None, budget=None,
            settings: dict | None = None, seed: int = 0, out: str | Path | None = None, data_home=None,
            progress: bool = False, echo: Callable[[str], None] | None = None, isolate: bool = True,
            quiet_tensorflow: None = None, read_options: dict | None = None) -> Comparison:
    """Fit every family of ``models`` on one training split and score them on its test split.

    Parameters
    ----------
    models : str or list of str
        Family names (:data:`mlgp.comparison.FAMILIES`), or one comma-separated text.
    dataset : str or mlgp.data.Dataset, optional
        A dataset of the data home (``data_home`` or ``$MLGP_DATA``) or a loaded one; or give
        ``train`` and ``test``, two labelled files (:func:`mlgp.data.read_labelled`,
        in ``data_format`` or the format their extensions name).
    budget : float, optional
        Wall seconds of the fit for each family that has a budget (every family but the label
        frequency: :attr:`mlgp.families.Family.budget`).
    settings : dict, optional
        ``{family: {parameter: value}}`` over the command line's defaults.
    seed : int or None
        Seeds every family that takes a seed (0 to 2**31 - 1, :data:`mlgp.arguments.MAX_SEED`;
        checked by :func:`mlgp.families.make_estimator`); ``None`` leaves each its own default.
    out : str or Path, optional
        Folder for ``runs/`` (one file per finished family; what a resumed call reads) and, through
        :func:`mlgp.comparison.report.write_report`, the tables and the figure.
    progress : bool
        Progress bars of the families that show one.
    echo : callable, optional
        Called with a line of text as each family starts and ends, and when a run file under
        ``out`` is broken and the family is fitted again.
    isolate : bool
        Fit each family in a fresh Python process (:mod:`mlgp.comparison.worker`; the default): its
        peak memory is its own, and a family that crashes the process (or is killed for memory) is
        recorded like any other failure. ``False`` fits in this process (faster to start; memory
        then counts what earlier families left).
    quiet_tensorflow : None
        Deprecated and ignored (a ``FutureWarning`` when given): TensorFlow comes up without its
        start-up lines by itself (:mod:`mlgp.quiet`), in this process and in the workers, unless
        ``TF_CPP_MIN_LOG_LEVEL`` is set (``mlgp --verbose`` sets it to 0).
    read_options : dict, optional
        More keyword arguments of :func:`mlgp.data.read_labelled` for the ``train`` and ``test``
        files, e.g. ``{"zero_based": True}`` or ``{"labels_from": 1}``.

    Returns
    -------
    Comparison
    """
    from ..fingerprint import data_fingerprint

    quiet_tensorflow_deprecated(quiet_tensorflow, "compare")
    check_read_options(read_options, train)
    models, estimators = checked_families(models, settings, seed, budget, (dataset, train, test, data_format),
                                          out, data_home, echo, {"progress": progress, "isolate": isolate})
    out = checked_out(out)
    ds = _dataset(dataset, train, test, data_format, data_home, read_options or {})
    fingerprint = data_fingerprint(ds.train.X, ds.train.Y, ds.test.X, ds.test.Y)
    inv_propensity = ds.inverse_propensity()
    echo = echo or (lambda line: None)

    def fit(name: str, estimator) -> tuple[dict, pd.DataFrame]:
        """Fit and score one family, in a worker process with ``isolate``."""
        if isolate:
            return run_isolated(name, estimator, ds, inv_propensity, bool(progress))
        return run_one(name, estimator, ds, inv_propensity, bool(progress))

    ran = [_fit_or_resume(name, estimator, _config(name, estimator, budget, seed, fingerprint), out, ds.test.Y.shape,
                          fit, echo) for name, estimator in estimators.items()]
    return _comparison(ran, _earlier_runs(out, models, budget, seed, fingerprint, ds.test.Y.shape, echo))


def _comparison(ran: list, earlier: list) -> Comparison:
    """The :class:`Comparison` of the families run (or resumed) and the ``earlier`` runs taken after
    them: each a (row, trace, per-row values) triple."""
    rows = [row for row, _, _ in ran + earlier]
    per_row = {row["family"]: values for row, _, values in ran if values}
    per_row.update({row["family"]: values for row, _, values in earlier})
    bins = {row["family"]: row.pop("_reliability", None) or {} for row in rows}
    traces = [trace for _, trace, _ in ran + earlier]
    trace_frame = pd.concat([thinned(t) for t in traces], ignore_index=True) if traces else empty_trace()
    return Comparison(_results_frame(rows), trace_frame, _reliability_frame(bins), per_row,
                      [row["family"] for row, _, _ in earlier])


def _fit_or_resume(name: str, estimator, config: dict, out: Path | None, test_shape: tuple[int, int],
                   fit: Callable, echo: Callable[[str], None]) -> tuple[dict, pd.DataFrame, dict]:
    """Family ``name``'s row, trace and per-test-row values: from its run and rows files under ``out``
    when they are whole and were made with ``config`` (:func:`mlgp.comparison.resume.finished_run`), else
    from ``fit(name, estimator)``, then recorded there. ``test_shape`` is (N_test, K)."""
    earlier = finished_run(out, name, config, test_shape[1], test_shape[0])
    if earlier.result is not None:
        echo(f"{name}: taken from {run_file(out, name)}")
        row, trace, values = earlier.result
        row["resumed"] = True
        return row, trace, values
    if earlier.problem is not None:
        echo(f"{name}: not resuming from {run_file(out, name)}: {earlier.problem}; fitting again")
    echo(f"{name}: fitting {type(estimator).__name__} ...")
    row, trace = fit(name, estimator)
    relay_warnings(row.pop("_warnings", None))  # from compare's caller
    values = {m: np.asarray(v, dtype=np.float64) for m, v in (row.pop("_rows", None) or {}).items()}
    row["resumed"] = False
    if out is not None:
        record_run(out, name, config, row, trace, values)
    echo(f"{name}: " + (f"error: {row['error']}" if row["error"] else
                        f"P@1 {row['P@1']:.2f} in {row['fit_seconds']:.1f} s"))
    return row, trace, values


def _results_frame(rows: list[dict]) -> pd.DataFrame:
    """The rows as :attr:`Comparison.results`, its columns in their fixed order whichever family
    comes first (one that failed has no metric columns; one without probabilities a ``proba_note``)."""
    metrics = [f"{m}@{k}" for m in ("P", "nDCG", "PSP") for k in KS]
    present = list(dict.fromkeys(c for row in rows for c in row))
    first = [c for c in (*_FIRST, *metrics) if c in present]
    last = [c for c in _LAST if c in present]
    return pd.DataFrame(rows, columns=first + [c for c in present if c not in first + last] + last)


def _reliability_frame(bins: dict) -> pd.DataFrame:
    """``{family: {entries: {"mean_probability": [...], ...}}}`` in long form (:class:`Comparison`)."""
    parts = [pd.DataFrame({"family": name, "entries": entries, **columns})
             for name, per in bins.items() for entries, columns in per.items()]
    if parts:
        return pd.concat(parts, ignore_index=True)
    return pd.DataFrame({"family": pd.Series(dtype=str), "entries": pd.Series(dtype=str),
                         "mean_probability": pd.Series(dtype=float), "frequency": pd.Series(dtype=float),
                         "count": pd.Series(dtype=int)})
