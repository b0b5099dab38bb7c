"""The FastXML paper's published numbers and the fit-and-score step its experiment scripts share.

Contract: ``PAPER_TABLE2`` / ``PAPER_TABLE6`` / ``PAPER_TABLE7`` hold Prabhu & Varma (KDD 2014)'s
figures as reconstructed in ``shared/papers/NOTES.md`` (their own random splits, not the XC
repository's splits these scripts use). :func:`make_estimator` builds one of the three methods
with the paper's defaults and a dataset's propensity parameters; :func:`fit_and_score` fits it,
times fit and prediction (wall clock), and scores the test split with
:func:`mlgp.metrics.evaluate` (percent; PSP / PSnDCG with the dataset's inverse propensities; test
rows without labels stay in every mean). ``"PfastXML"`` rows can be scored from a fitted
:class:`~mlgp.baselines.PfastreXML` with ``alpha = 1`` (the same trees; re-ranking off).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from ..errors import ArgumentError

__all__ = ["add_ensemble_args", "ensemble_options", "parse_table_args", "FASTXML_METHODS", "KS", "METRICS", "METRIC_COLUMNS", "PAPER_TABLE2", "PAPER_TABLE6", "PAPER_TABLE7",
           "XC_REPOSITORY_BIBTEX", "make_estimator", "fit_and_score", "score"]

FASTXML_METHODS = ("FastXML", "PfastXML", "PfastreXML")
KS = (1, 3, 5)
METRICS = ("P", "nDCG", "PSP", "PSnDCG")
METRIC_COLUMNS = [f"{m}@{k}" for m in METRICS for k in KS]

#: Table 2, FastXML: P@1/3/5 mean and std over the paper's 10 random splits.
PAPER_TABLE2 = {
    "bibtex": ((63.26, 39.19, 28.72), (0.84, 0.66, 0.48)),
    "delicious": ((69.65, 63.93, 59.36), (0.82, 0.50, 0.57)),
}
#: The Extreme Classification Repository's FastXML Bibtex figures (the ones paper 003 quotes).
XC_REPOSITORY_BIBTEX = (63.42, 39.23, 28.86)
#: Table 6: tree balance (mean leaf depth / log2(N / MaxLeaf)) and average labels per leaf.
PAPER_TABLE6 = {"bibtex": (1.02, 6.15), "delicious": (1.03, 69.12)}
#: Table 7: P@1/3/5 with the split loss replaced (nDCG@L is FastXML's own).
PAPER_TABLE7 = {
    ("bibtex", "nDCG@L"): (63.26, 39.19, 28.72),
    ("bibtex", "P@5"): (39.95, 23.01, 17.42),
    ("bibtex", "nDCG@5"): (51.75, 30.87, 22.70),
    ("delicious", "nDCG@L"): (69.65, 63.93, 59.36),
    ("delicious", "P@5"): (60.11, 53.97, 49.81),
    ("delicious", "nDCG@5"): (64.96, 59.28, 54.70),
}


def add_ensemble_args(parser: argparse.ArgumentParser, datasets: str, quick_trees: int = 3) -> None:
    """The options every FastXML script shares: ``--datasets`` (default ``datasets``; ``--quick``:
    enron), ``--trees`` (default 50; ``--quick``: ``quick_trees``), ``--n-jobs`` (default 2;
    ``--quick``: 1) and ``--solver`` (the node solver, default ``newglmnet``). Resolve them with
    :func:`ensemble_options`."""
    parser.add_argument("--datasets", default=None, help=f"comma-separated (default {datasets}; --quick: enron)")
    parser.add_argument("--trees", type=int, default=None, help=f"trees per ensemble (default 50; --quick: {quick_trees})")
    parser.add_argument("--n-jobs", type=int, default=None,
                        help="threads (newglmnet) or processes (liblinear) growing trees (default 2; --quick: 1)")
    parser.add_argument("--solver", choices=("newglmnet", "liblinear"), default="newglmnet",
                        help="the separators' solver (default newglmnet, compiled; liblinear: the reference)")
    parser.set_defaults(default_datasets=datasets, quick_trees=quick_trees)


def parse_table_args(argv: list[str] | None, description: str, datasets: str) -> argparse.Namespace:
    """A FastXML table script's command line: the experiment options
    (:func:`mlgp.experiment.add_argparse_args`), :func:`add_ensemble_args` and ``--fresh``, with
    ``datasets``, ``trees`` and ``n_jobs`` resolved by :func:`ensemble_options`."""
    from . import add_argparse_args

    parser = argparse.ArgumentParser(description=description)
    add_argparse_args(parser)
    add_ensemble_args(parser, datasets)
    parser.add_argument("--fresh", action="store_true", help="discard the runs already stored")
    args = parser.parse_args(argv)
    args.datasets, args.trees, args.n_jobs = ensemble_options(args, parser)
    return args


def ensemble_options(args: argparse.Namespace, parser: argparse.ArgumentParser) -> tuple[list[str], int, int]:
    """``(datasets, trees, n_jobs)`` from the options of :func:`add_ensemble_args` (a bad
    ``--trees`` or ``--n-jobs`` is a parser error)."""
    if args.trees is not None and args.trees < 1:
        parser.error("--trees must be >= 1")
    if args.n_jobs is not None and args.n_jobs == 0:
        parser.error("--n-jobs must not be 0")
    datasets = [d for d in (args.datasets or ("enron" if args.quick else args.default_datasets)).split(",") if d]
    trees = args.trees or (args.quick_trees if args.quick else 50)
    n_jobs = args.n_jobs if args.n_jobs is not None else (1 if args.quick else 2)
    return datasets, trees, n_jobs


def make_estimator(method: str, dataset: Any, seed: int, n_estimators: int = 50, n_jobs: int | None = 2,
                   **params: Any):
    """FastXML, PfastXML or PfastreXML with the paper's defaults, seeded ``seed``; the propensity
    methods use ``dataset``'s (A, B) (a :class:`mlgp.data.Dataset`)."""
    from mlgp.baselines import FastXML, PfastreXML, PfastXML

    if method == "FastXML":
        return FastXML(n_estimators=n_estimators, n_jobs=n_jobs, random_state=seed, **params)
    cls = {"PfastXML": PfastXML, "PfastreXML": PfastreXML}.get(method)
    if cls is None:
        raise ArgumentError(f"unknown method {method!r}; choose from {FASTXML_METHODS}")
    return cls(n_estimators=n_estimators, n_jobs=n_jobs, random_state=seed, propensity_a=dataset.propensity_a,
               propensity_b=dataset.propensity_b, **params)


def score(est, dataset: Any) -> tuple[dict[str, float], float]:
    """``({"P@1": …, …, "PSnDCG@5": …}, predict seconds)`` of a fitted estimator on the test split."""
    from mlgp.metrics import evaluate

    t0 = time.perf_counter()
    top = est.predict_topk(dataset.test.X, max(KS))
    seconds = time.perf_counter() - t0
    ev = evaluate(dataset.test.Y, top, ks=KS, inv_propensity=dataset.inverse_propensity())
    return {f"{m}@{k}": float(ev.loc[m, k]) for m in METRICS for k in KS}, seconds


def fit_and_score(method: str, dataset: Any, seed: int, n_estimators: int = 50, n_jobs: int | None = 2,
                  **params: Any) -> tuple[Any, dict[str, float]]:
    """Fit one method on the train split and score it: ``(estimator, row)`` with the metric
    columns, ``fit_seconds``, ``predict_seconds`` and the tree statistics (mean balance, mean
    labels per leaf, mean leaves per tree)."""
    est = make_estimator(method, dataset, seed, n_estimators, n_jobs, **params)
    t0 = time.perf_counter()
    est.fit(dataset.train.X, dataset.train.Y)
    fit_seconds = time.perf_counter() - t0
    metrics, predict_seconds = score(est, dataset)
    row = dict(metrics, fit_seconds=fit_seconds, predict_seconds=predict_seconds,
               balance=float(est.tree_balance_.mean()), balance_std_over_trees=float(est.tree_balance_.std()),
               labels_per_leaf=float(est.labels_per_leaf_.mean()),
               leaves_per_tree=float(est.n_leaves_.mean()))
    return est, row
