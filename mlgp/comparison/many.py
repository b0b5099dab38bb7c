"""One comparison of model families on many data sets: :func:`compare_many`, the Python twin of
``mlgp compare --dataset a,b,c`` and ``--dataset all``.

Contract: every argument is checked before any data are read or any fitting — the families and
their settings as :func:`mlgp.compare` checks them, and the data sets: ``"all"`` (every data set of
the data home, :func:`mlgp.data.available`; an empty data home is an
:class:`~mlgp.errors.ArgumentError`), a comma-separated text or a list of names (or loaded
:class:`mlgp.data.Dataset` objects); a name given twice or empty is an ``ArgumentError``, a name
without a dataset folder in the data home a :class:`~mlgp.errors.DatasetNotFoundError`. Then each
data set in turn is loaded and compared (:func:`mlgp.compare`) into ``out/<dataset>/`` — exactly the
files of a one-data-set comparison, resumable family by family — and its report written there
(:func:`mlgp.comparison.write_report`). A data set that cannot be read (a malformed file, no training
labels) is skipped with its reason (echoed, and kept in :attr:`ManyComparison.skipped`) and the
others run.

The summary over the data sets (:func:`summarise`): per data set and family P@1, P@5, LPD, NLL per
entry and ECE (or the family's error); each family's mean rank by P@1 and by LPD
(:func:`mlgp.comparison.ranks.rank_table`: rank 1 = best, ties share the mean rank, a family that
failed on a data set ranks last there, a family without probabilities is not ranked by LPD, a data
set on which every family failed is left out); per
measure the Friedman test, its Iman–Davenport form and the Nemenyi critical difference at
``alpha``; per data set and measure each family's difference to the best family with a paired
bootstrap interval over the test rows (P@1 in percentage points, LPD in nats per test point). With
``out`` the summary files are written there too (:func:`mlgp.comparison.summary.write_summary`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from ..errors import ArgumentError, MLGPError
from .ranks import critical_difference, friedman, paired_bootstrap, q_alpha, rank_table
from .checks import checked_families, checked_out, quiet_tensorflow_deprecated, wrong_argument
from .run import Comparison, compare

__all__ = ["ALL", "RANKED", "SUMMARY_COLUMNS", "ManyComparison", "compare_many", "summarise"]

#: The ``datasets`` value that names every data set of the data home.
ALL = "all"
#: The columns of the summary, per data set and family.
SUMMARY_COLUMNS = ("P@1", "P@5", "LPD", "NLL", "ECE")
#: The measures the families are ranked and bootstrapped by (higher is better for both).
RANKED = ("P@1", "LPD")


@dataclass
class ManyComparison:
    """What :func:`compare_many` returns.

    Attributes
    ----------
    comparisons : dict of str to Comparison
        Each data set compared, in the order given.
    skipped : dict of str to str
        Each data set that could not be read → why.
    summary : pandas.DataFrame
        Long form, one row per data set and family: ``dataset``, ``family``, :data:`SUMMARY_COLUMNS`
        and ``error`` (empty when it ran); a skipped data set is one row with an empty ``family``
        and its reason.
    ranks : pandas.DataFrame
        Index ``family``; one column per measure of :data:`RANKED`: the mean rank over the data sets
        (NaN where the family is not ranked by that measure).
    tests : pandas.DataFrame
        One row per measure: ``measure``, ``families`` (k), ``datasets`` (N), ``chi2``, ``p_value``,
        ``iman_davenport``, ``iman_davenport_p``, ``alpha``, ``q_alpha`` and ``critical_difference``.
    bootstrap : pandas.DataFrame
        ``dataset``, ``measure`` and the columns of :func:`mlgp.comparison.ranks.paired_bootstrap`.
    rank_tables : dict of str to pandas.DataFrame
        Per measure, the ranks of each data set (rows) and family (columns).
    files : dict of str to Path
        The summary files written into ``out`` (empty without ``out``).
    """

    comparisons: dict[str, Comparison]
    skipped: dict[str, str]
    summary: pd.DataFrame
    ranks: pd.DataFrame
    tests: pd.DataFrame
    bootstrap: pd.DataFrame
    rank_tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)


def _check_datasets(datasets) -> list:
    """``"all"``, or the names (and :class:`~mlgp.data.Dataset` objects) of ``datasets``, checked."""
    from ..data.registry import Dataset

    if isinstance(datasets, str):
        if datasets.strip() == ALL:
            return [ALL]
        datasets = [d.strip() for d in datasets.split(",")]
    elif isinstance(datasets, (bytes, dict, Dataset)) or not hasattr(datasets, "__iter__"):
        raise wrong_argument("datasets", "'all', a comma-separated text of dataset names or a list of them", datasets)
    datasets = list(datasets)
    for d in datasets:
        if not isinstance(d, (str, Dataset)):
            raise wrong_argument("datasets", "dataset names (texts) or mlgp.data.Dataset objects", d)
        if isinstance(d, str) and (not d or d != d.strip() or "/" in d or d in (".", "..")):
            raise ArgumentError(f"compare_many: {d!r} is not a dataset name")
    if not datasets:
        raise ArgumentError("compare_many needs at least one dataset")
    names = [d if isinstance(d, str) else d.name for d in datasets]
    if ALL in names and len(names) > 1:
        raise ArgumentError(f"{ALL!r} names every dataset of the data home; give it alone")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ArgumentError(f"dataset listed twice: {', '.join(twice)}")
    return datasets


def _resolve(datasets: list, data_home) -> list:
    """The data sets to compare: the data home's for ``["all"]``; named ones checked to be there."""
    from ..data import available, data_home as resolve_home, load

    if not any(isinstance(d, str) for d in datasets):
        return datasets
    home = resolve_home(data_home, option="data_home")
    present = available(home)
    if datasets == [ALL]:
        if not present:
            raise ArgumentError(f"the data home {str(home)!r} holds no dataset (no folder with train and test files)")
        return present
    for d in datasets:
        if isinstance(d, str) and d not in present:
            load(d, home)  # raises DatasetNotFoundError, naming what is missing and what is there
    return datasets


def _load(dataset, data_home) -> tuple[object | None, str | None]:
    """``(Dataset, None)``, or ``(None, why)`` when it cannot be read."""
    from ..data import load

    if not isinstance(dataset, str):
        ds = dataset
    else:
        try:
            ds = load(dataset, data_home)
        except (MLGPError, OSError, ValueError) as err:
            return None, f"{type(err).__name__}: {err}".splitlines()[0]
    if ds.train.Y.nnz == 0:
        return None, "the training data have no labels"
    return ds, None


def compare_many(models, datasets, *, budget=None, settings: dict | None = None, seed: int | None = 0,
                 out: str | Path | None = None, data_home=None, progress: bool = False,
                 echo: Callable[[str], None] | None = None, isolate: bool = True, quiet_tensorflow: None = None,
                 n_resamples: int = 1000, alpha: float = 0.05, command: str | None = None) -> ManyComparison:
    """Compare the families of ``models`` on each of ``datasets`` and summarise over the data sets.

    Parameters
    ----------
    models : str or list of str
        Family names (:data:`mlgp.comparison.FAMILIES`), or one comma-separated text.
    datasets : str or list of (str or mlgp.data.Dataset)
        ``"all"``, a comma-separated text of names, or a list of names or loaded data sets.
    budget, settings, seed, data_home, progress, isolate
        As :func:`mlgp.compare`, for every data set; ``seed`` also seeds the bootstrap.
    quiet_tensorflow : None
        Deprecated and ignored, as :func:`mlgp.compare`'s (a ``FutureWarning`` when given).
    out : str or Path, optional
        Folder of one sub-folder per data set (:func:`mlgp.compare`'s files and report) and of the
        summary files.
    echo : callable, optional
        Called with each line :func:`mlgp.compare` echoes (prefixed with the data set's name) and
        with the reason of each data set skipped.
    n_resamples : int
        Bootstrap resamples of the test rows.
    alpha : float
        Level of the Nemenyi critical difference.
    command : str, optional
        The command line, written into each report and the summary.

    Returns
    -------
    ManyComparison
    """
    quiet_tensorflow_deprecated(quiet_tensorflow, "compare_many")
    models, _ = checked_families(models, settings, seed, budget, (None, None, None, None), out, data_home, echo,
                                 {"progress": progress, "isolate": isolate})
    if int(n_resamples) != n_resamples or isinstance(n_resamples, bool) or n_resamples < 1:
        raise wrong_argument("n_resamples", "a whole number >= 1", n_resamples)
    q_alpha(2, alpha)  # checks alpha
    datasets = _check_datasets(datasets)
    out = checked_out(out)
    datasets = _resolve(datasets, data_home)
    echo = echo or (lambda line: None)
    comparisons, skipped = {}, {}
    for dataset in datasets:
        name = dataset if isinstance(dataset, str) else dataset.name
        ds, why = _load(dataset, data_home)
        if ds is None:
            skipped[name] = why
            echo(f"{name}: skipped, it cannot be read: {why}")
            continue
        comparisons[name] = compare(models, dataset=ds, budget=budget, settings=settings, seed=seed,
                                    out=None if out is None else out / name, progress=progress,
                                    echo=lambda line, n=name: echo(f"{n}: {line}"), isolate=isolate)
        del ds
        if out is not None:
            from .report import write_report

            write_report(comparisons[name], out / name, title=f"mlgp compare: {name}", command=command)
    many = summarise(comparisons, skipped, models, n_resamples=int(n_resamples), alpha=alpha,
                     seed=0 if seed is None else int(seed))
    if out is not None:
        from .summary import write_summary

        many.files = write_summary(many, out, command=command)
    return many


def _summary_frame(comparisons: dict[str, Comparison], skipped: dict[str, str], models: list[str]) -> pd.DataFrame:
    """:attr:`ManyComparison.summary`."""
    rows = []
    for name, result in comparisons.items():
        by_family = result.results.set_index("family")
        for family in models:
            r = by_family.loc[family]
            error = str(r["error"]) if "error" in r and isinstance(r["error"], str) else ""
            values = {c: (float(r[c]) if c in r and pd.notna(r[c]) and not error else np.nan) for c in SUMMARY_COLUMNS}
            rows.append({"dataset": name, "family": family, **values, "error": error})
    for name, why in skipped.items():
        rows.append({"dataset": name, "family": "", **{c: np.nan for c in SUMMARY_COLUMNS},
                     "error": f"dataset not read: {why}"})
    columns = ["dataset", "family", *SUMMARY_COLUMNS, "error"]
    return pd.DataFrame(rows, columns=columns).astype({c: float for c in SUMMARY_COLUMNS})


def summarise(comparisons: dict[str, Comparison], skipped: dict[str, str], models: list[str], *,
              n_resamples: int = 1000, alpha: float = 0.05, seed: int = 0) -> ManyComparison:
    """The summary frames of the ``comparisons`` (data set → :class:`Comparison` of ``models``).

    Returns
    -------
    ManyComparison
        Without ``files``.
    """
    summary = _summary_frame(comparisons, skipped, models)
    ran = summary[summary["family"] != ""]
    tables, means, tests = {}, {}, []
    for measure in RANKED:
        values = ran.pivot(index="dataset", columns="family", values=measure)
        values = values.reindex(index=list(comparisons), columns=models)
        failed = ran.assign(failed=ran["error"] != "").pivot(index="dataset", columns="family", values="failed")
        ranks = rank_table(values, failed=failed)
        tables[measure] = ranks
        means[measure] = ranks.mean(axis=0)
        N, k = ranks.shape
        result = friedman(ranks)
        qa = q_alpha(k, alpha) if k >= 2 else np.nan
        cd = critical_difference(k, N, alpha) if k >= 2 and N >= 1 else np.nan
        tests.append({"measure": measure, "families": k, "datasets": N, "chi2": result.chi2,
                      "p_value": result.p_value, "iman_davenport": result.iman_davenport,
                      "iman_davenport_p": result.iman_davenport_p, "alpha": alpha, "q_alpha": qa,
                      "critical_difference": cd})
    ranks = pd.DataFrame(means).reindex([m for m in models if any(m in s.index for s in means.values())])
    ranks.index.name = "family"
    return ManyComparison(comparisons, dict(skipped), summary, ranks, pd.DataFrame(tests),
                          _bootstrap_frame(comparisons, n_resamples, seed), tables)


def _bootstrap_frame(comparisons: dict[str, Comparison], n_resamples: int, seed: int) -> pd.DataFrame:
    """:attr:`ManyComparison.bootstrap`: per data set and measure of :data:`RANKED`, the families
    with rows of that measure against the best of them."""
    parts = []
    for name, result in comparisons.items():
        for measure in RANKED:
            scale = 100.0 if measure.startswith("P@") else 1.0  # P@k in percent, as its column
            values = {f: scale * rows[measure] for f, rows in result.rows.items() if measure in rows}
            if values:
                part = paired_bootstrap(values, n_resamples=n_resamples, seed=seed)
                parts.append(part.assign(dataset=name, measure=measure))
    columns = ["dataset", "measure", "family", "mean", "best", "difference", "low", "high", "excludes_zero"]
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=bool if c == "excludes_zero" else float if c in (
            "mean", "difference", "low", "high") else str) for c in columns})
    return pd.concat(parts, ignore_index=True)[columns]
