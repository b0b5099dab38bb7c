"""One comparison of model families on one split: :func:`compare`, the Python twin of ``mlgp compare``.

Contract: every family named (:data:`mlgp.comparison.FAMILIES`) is built and checked before any
fitting (an unknown family or parameter, a value outside its constraints, a family named twice or a
budget ≤ 0 raise :class:`~mlgp.errors.ArgumentError`), then fitted in turn on the same training
split — each within ``budget`` wall seconds where the family has a budget (MLGPF, GenEML: training
stops after the epoch or EM iteration that ends past it; the trees and LSPC have none) — and scored on
the test split: P@1/3/5, nDCG@1/3/5 and PSP@1/3/5 (percent; propensities from the training labels),
the probability columns of :mod:`mlgp.comparison.probabilities` (test log predictive density, NLL per
entry, Brier, ECE, ECE@k, micro/macro-F1 at 0.5 and with thresholds chosen on held-out rows; empty with
a ``proba_note`` for a family without probabilities), fit and predict seconds, and the peak resident memory of the fitting process and its workers
(:mod:`mlgp.comparison.memory`; each family is fitted in a fresh process unless ``isolate=False``, so
the figure is its own: the interpreter, its libraries, the data and the fit). Families that train in steps record their trace against seconds
(MLGPF's ELBO, GenEML's log posterior, both per training point, and test P@1/3/5 per step). A family
that fails is recorded with its error and the others go on. With ``out``, each finished family is
written at once to ``out/runs/<family>.json`` (atomically) with what it was run with (its
parameters, the budget, the seed and a fingerprint of the data); a later call with the same ``out``
takes a family's result from there instead of refitting it when all of these match, so a killed
run resumes. The tables and figure are written by :mod:`mlgp.comparison.report`.
"""

from __future__ import annotations

import json
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from ..errors import ArgumentError
from .families import family, fit_arguments, make_estimator, uses_tensorflow
from .probabilities import probability_row

__all__ = ["Comparison", "compare"]

KS = (1, 3, 5)
#: Environment variable set for a worker (:mod:`mlgp.comparison.worker`): ``1`` imports TensorFlow
#: quietly there (:mod:`mlgp.quiet`).
QUIET = "MLGP_WORKER_QUIET_TF"


@dataclass
class Comparison:
    """What :func:`compare` returns.

    Attributes
    ----------
    results : pandas.DataFrame
        One row per family: ``family``, ``estimator``, ``P@k``, ``nDCG@k``, ``PSP@k`` (k = 1, 3, 5;
        percent), ``fit_seconds``, ``predict_seconds``, ``peak_memory_mb`` (the peak resident memory of
        the fitting process and its workers during the fit, MiB), ``settings`` (the
        parameters that differ from the class's defaults, as text, or ``"defaults"``), ``error`` (empty when it ran)
        and ``resumed`` (taken from an earlier run's files).
    traces : pandas.DataFrame
        Long form, one row per family, step and quantity: ``family``, ``step``, ``seconds`` (since
        the fit began), ``quantity`` (``elbo_per_point``, ``log_posterior_per_point``, ``P@1`` …)
        and ``value``; at most :data:`MAX_TRACE_STEPS` steps per family, evenly spaced.
    reliability : pandas.DataFrame
        The reliability bins of each family with probabilities: ``family``, ``entries`` (``"all"``
        entries, or ``"top5"``: each point's 5 most probable labels), ``mean_probability``,
        ``frequency`` and ``count``, one row per non-empty equal-mass bin.
    """

    results: pd.DataFrame
    traces: pd.DataFrame
    reliability: pd.DataFrame = None

    def __post_init__(self) -> None:
        if self.reliability is None:
            self.reliability = _reliability_frame({})


def _check_models(models) -> list[str]:
    if isinstance(models, str):
        models = [m.strip() for m in models.split(",") if m.strip()]
    models = list(models)
    if not models:
        raise ArgumentError("compare needs at least one family")
    twice = sorted({m for m in models if models.count(m) > 1})
    if twice:
        raise ArgumentError(f"family listed twice: {', '.join(twice)}")
    for m in models:
        family(m)
    return models


def _check_budget(budget) -> float | None:
    import math
    import numbers

    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, numbers.Real) or not (math.isfinite(budget) and budget > 0):
        raise ArgumentError(f"budget must be a number of seconds > 0, got {budget!r}")
    return float(budget)


def _settings_text(estimator) -> str:
    """The parameters that differ from the class's defaults, ``name=value`` separated by ``; ``."""
    defaults = type(estimator)().get_params(deep=False)
    changed = {k: v for k, v in estimator.get_params(deep=False).items() if repr(defaults.get(k)) != repr(v)}
    return "; ".join(f"{k}={v!r}" for k, v in changed.items()) or "defaults"


def _config(name: str, estimator, budget, seed, fingerprint: str) -> dict:
    return {"family": name, "class": type(estimator).__name__,
            "params": {k: repr(v) for k, v in sorted(estimator.get_params(deep=False).items())},
            "budget": budget, "seed": seed, "data": fingerprint}


def compare(models, *, dataset=None, train=None, test=None, data_format: str | None = None, budget=None,
            settings: dict | None = None, seed: int = 0, out: str | Path | None = None, data_home=None,
            progress: bool = False, echo: Callable[[str], None] | None = None, isolate: bool = True,
            quiet_tensorflow: bool = False) -> Comparison:
    """Fit every family of ``models`` on one training split and score them on its test split.

    Parameters
    ----------
    models : str or list of str
        Family names (:data:`mlgp.comparison.FAMILIES`), or one comma-separated text.
    dataset : str or mlgp.data.Dataset, optional
        A dataset of the data home (``data_home`` or ``$MLGP_DATA``) or a loaded one; or give
        ``train`` and ``test``, two labelled files (:func:`mlgp.data.labelled_files.read_labelled`,
        in ``data_format`` or the format their extensions name).
    budget : float, optional
        Wall seconds of the fit for each family that has a budget (MLGPF, GenEML).
    settings : dict, optional
        ``{family: {parameter: value}}`` over the command line's defaults.
    seed : int
        Seeds every family that takes a seed.
    out : str or Path, optional
        Folder for ``runs/`` (one file per finished family; what a resumed call reads) and, through
        :func:`mlgp.comparison.report.write_report`, the tables and the figure.
    progress : bool
        Progress bars of the families that show one.
    echo : callable, optional
        Called with a line of text as each family starts and ends.
    isolate : bool
        Fit each family in a fresh Python process (:mod:`mlgp.comparison.worker`; the default): its
        peak memory is its own, and a family that crashes the process (or is killed for memory) is
        recorded like any other failure. ``False`` fits in this process (faster to start; memory then counts what earlier
        families left).

    Returns
    -------
    Comparison
    """
    from ..data.registry import Dataset, Split
    from ..fingerprint import data_fingerprint

    models = _check_models(models)
    budget = _check_budget(budget)
    settings = dict(settings or {})
    stray = sorted(set(settings) - set(models))
    if stray:
        raise ArgumentError(f"settings given for {', '.join(stray)}, which is not among the families compared")
    estimators = {m: make_estimator(m, settings.get(m), seed=seed, budget=budget) for m in models}
    if out is not None:
        from .inputs import check_output_folder

        out = Path(out)
        check_output_folder(out)
    if isinstance(dataset, Dataset):
        ds = dataset
    elif dataset is not None:
        from .inputs import load_dataset

        ds = load_dataset(dataset, data_home)
    else:
        if train is None or test is None:
            raise ArgumentError("compare needs a dataset, or both a train and a test file")
        from ..data.labelled_files import read_labelled

        Xtr, Ytr = read_labelled(train, data_format)
        Xte, Yte = read_labelled(test, data_format, num_features=Xtr.shape[1], num_labels=Ytr.shape[1])
        ds = Dataset(Path(train).name, Split("train", Xtr, Ytr, Path(train)), Split("test", Xte, Yte, Path(test)))
    if ds.train.Y.nnz == 0:
        raise ArgumentError(f"{ds.name}: the training data have no labels")
    fingerprint = data_fingerprint(ds.train.X, ds.train.Y, ds.test.X, ds.test.Y)
    inv_propensity = ds.inverse_propensity()
    echo = echo or (lambda line: None)
    rows, traces = [], []
    for name, estimator in estimators.items():
        config = _config(name, estimator, budget, seed, fingerprint)
        done = _finished(out, name, config)
        if done is not None:
            echo(f"{name}: taken from {out / 'runs' / (name + '.json')}")
            row, trace = done
            row["resumed"] = True
        else:
            echo(f"{name}: fitting {type(estimator).__name__} ...")
            if isolate:
                row, trace = _run_isolated(name, estimator, ds, inv_propensity, progress, quiet_tensorflow)
            else:
                row, trace = _run_one(name, estimator, ds, inv_propensity, progress)
            row["resumed"] = False
            if out is not None:
                _record(out, name, config, row, trace)
            echo(f"{name}: " + (f"error: {row['error']}" if row["error"] else
                                f"P@1 {row['P@1']:.2f} in {row['fit_seconds']:.1f} s"))
        rows.append(row)
        traces.append(trace)
    bins = {row["family"]: row.pop("_reliability", None) or {} for row in rows}
    results = pd.DataFrame(rows)
    trace_frame = pd.concat([_thinned(t) for t in traces], ignore_index=True) if traces else _empty_trace()
    return Comparison(results, trace_frame, _reliability_frame(bins))


def _reliability_frame(bins: dict) -> pd.DataFrame:
    """``{family: {entries: {"mean_probability": [...], ...}}}`` in long form (:class:`Comparison`)."""
    parts = [pd.DataFrame({"family": name, "entries": entries, **columns})
             for name, per in bins.items() for entries, columns in per.items()]
    if parts:
        return pd.concat(parts, ignore_index=True)
    return pd.DataFrame({"family": pd.Series(dtype=str), "entries": pd.Series(dtype=str),
                         "mean_probability": pd.Series(dtype=float), "frequency": pd.Series(dtype=float),
                         "count": pd.Series(dtype=int)})


#: At most this many steps of a family's trace are kept (evenly spaced, the first and last among them).
MAX_TRACE_STEPS = 500


def _thinned(trace: pd.DataFrame) -> pd.DataFrame:
    """``trace`` with at most :data:`MAX_TRACE_STEPS` of its steps (a family with many short epochs,
    MLGPF on a few hundred points, records thousands)."""
    steps = np.unique(trace["step"].to_numpy())
    if steps.size <= MAX_TRACE_STEPS:
        return trace
    kept = steps[np.unique(np.linspace(0, steps.size - 1, MAX_TRACE_STEPS).round().astype(int))]
    return trace[trace["step"].isin(kept)].reset_index(drop=True)


def _empty_trace() -> pd.DataFrame:
    return pd.DataFrame({"family": pd.Series(dtype=str), "step": pd.Series(dtype=int),
                         "seconds": pd.Series(dtype=float), "quantity": pd.Series(dtype=str),
                         "value": pd.Series(dtype=float)})


def _run_isolated(name: str, estimator, ds, inv_propensity, progress: bool, quiet: bool = False):
    """:func:`_run_one` in a fresh Python process (:mod:`mlgp.comparison.worker`; ``quiet``: it
    imports TensorFlow without its start-up lines)."""
    import os
    import pickle
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mlgp-compare-") as tmp:
        folder = Path(tmp)
        (folder / "job.pickle").write_bytes(pickle.dumps((name, estimator, ds, inv_propensity, progress)))
        env = {**os.environ, QUIET: "1" if quiet and uses_tensorflow(estimator) else "0"}
        done = subprocess.run([sys.executable, "-m", "mlgp.comparison.worker", str(folder)], check=False, env=env)
        if (folder / "row.json").is_file():
            row = json.loads((folder / "row.json").read_text())
            trace = pd.read_csv(folder / "trace.csv", dtype={"family": str, "quantity": str})
            return row, trace if len(trace) else _empty_trace()
    how = f"killed by signal {-done.returncode}" if done.returncode < 0 else f"exit status {done.returncode}"
    row = {"family": name, "estimator": type(estimator).__name__, "settings": _settings_text(estimator),
           "error": f"the fitting process ended without a result ({how}; out of memory?)"}
    return row, _empty_trace()


def _run_one(name: str, estimator, ds, inv_propensity, progress: bool):
    """Fit and score one family; any exception becomes the row's ``error``."""
    from ..metrics import evaluate
    from .memory import PeakMemory

    row = {"family": name, "estimator": type(estimator).__name__, "settings": _settings_text(estimator), "error": ""}
    K = ds.train.Y.shape[1]
    ks = [k for k in KS if k <= K]
    try:
        validation = (ds.test.X, ds.test.Y) if family(name).steps else None
        kwargs = fit_arguments(estimator, progress, validation)
        with PeakMemory() as memory:
            t0 = time.perf_counter()
            estimator.fit(ds.train.X, ds.train.Y, **kwargs)
            row["fit_seconds"] = time.perf_counter() - t0
        row["peak_memory_mb"] = memory.peak_mb
        t0 = time.perf_counter()
        top = estimator.predict_topk(ds.test.X, max(ks))
        row["predict_seconds"] = time.perf_counter() - t0
        table = evaluate(ds.test.Y, top, ks=ks, inv_propensity=inv_propensity)
        for metric in ("P", "nDCG", "PSP"):
            row.update({f"{metric}@{k}": float(table.loc[metric, k]) for k in ks})
        probabilities, row["_reliability"] = probability_row(estimator, ds.test.X, ds.test.Y)
        row.update(probabilities)
        trace = _trace_of(name, estimator, ds.train.X.shape[0])
    except Exception as err:  # noqa: BLE001 - a family that fails is recorded and the others go on
        row["error"] = f"{type(err).__name__}: {err}".splitlines()[0]
        row["traceback"] = traceback.format_exc(limit=5)
        trace = _empty_trace()
    return row, trace


def _trace_of(name: str, estimator, num_train: int) -> pd.DataFrame:
    """The fitted estimator's ``trace_`` in long form (empty for families without one)."""
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


def _run_file(out: Path, name: str) -> Path:
    return out / "runs" / f"{name}.json"


def _finished(out: Path | None, name: str, config: dict):
    """An earlier run's ``(row, trace)`` for ``name`` made with ``config``; ``None`` otherwise
    (no file, a file that does not read, or one made with other settings or data)."""
    if out is None or not _run_file(out, name).is_file():
        return None
    try:
        saved = json.loads(_run_file(out, name).read_text())
        if saved.get("config") != json.loads(json.dumps(config)) or saved.get("row", {}).get("error"):
            return None
        trace = pd.DataFrame(saved["trace"], columns=list(_empty_trace().columns))
        return dict(saved["row"]), trace if len(trace) else _empty_trace()
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None


def _record(out: Path, name: str, config: dict, row: dict, trace: pd.DataFrame) -> None:
    from ..files import atomic_write

    (out / "runs").mkdir(parents=True, exist_ok=True)
    text = json.dumps({"config": config, "row": row, "trace": trace.to_dict(orient="list")}, indent=1,
                      default=float).encode()
    atomic_write(_run_file(out, name), lambda f: f.write(text))
