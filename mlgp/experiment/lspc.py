"""Model selection and fitting of the ML-LSPC paper's three methods for the experiment scripts.

Contract: :func:`select_and_fit` chooses one method's hyperparameters on a training set by K-fold
cross-validation — LSPC and ML-LSPC with :class:`mlgp.baselines.MLLSPCCV` (LSPC: coupling 0, then an
actual :class:`~mlgp.baselines.LSPC` is refitted; ML-LSPC: the couplings given, all > 0), ML-kNN
with :class:`~sklearn.model_selection.GridSearchCV` over ``n_neighbors`` — then fits the chosen
model on the whole training set, timing the two stages apart.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from ..errors import ArgumentError

__all__ = ["LSPC_METHODS", "add_run_options", "method_list", "params_text", "select_and_fit"]

#: The methods :func:`select_and_fit` knows.
LSPC_METHODS = ("LSPC", "ML-LSPC", "ML-kNN")


def add_run_options(parser: argparse.ArgumentParser, runs_file: str) -> None:
    """``--methods`` (a comma-separated subset of :data:`LSPC_METHODS`), ``--fresh`` (discard the
    runs in the results folder's ``runs_file``) and ``--threads`` (BLAS/OpenMP threads)."""
    parser.add_argument("--methods", default=",".join(LSPC_METHODS),
                        help="comma-separated subset of " + ",".join(LSPC_METHODS))
    parser.add_argument("--fresh", action="store_true", help=f"discard the runs already in the results folder's {runs_file}")
    parser.add_argument("--threads", type=int, default=None,
                        help="BLAS/OpenMP threads (threadpoolctl; default: the libraries' own); timings depend on it")


def method_list(parser: argparse.ArgumentParser, text: str) -> list[str]:
    """``--methods``'s text as a list of :data:`LSPC_METHODS` (:func:`mlgp.experiment.choice_list`)."""
    from . import choice_list

    return choice_list(parser, text, LSPC_METHODS, "method")


def params_text(params: dict) -> str:
    """``"name=value; ..."``, sorted by name, floats to 4 significant digits."""
    return "; ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(params.items()))


def _knn_scorer(scoring: str):
    """A GridSearchCV scorer of MLkNN for one of MLLSPCCV's scorings (greater is better)."""
    from mlgp.baselines.mllspc_cv import SCORINGS

    def score(estimator, X, Y) -> float:
        Y = Y.toarray() if hasattr(Y, "toarray") else Y
        return SCORINGS[scoring](Y, estimator.predict(X), estimator.decision_function(X))

    return score


def select_and_fit(method: str, X, Y, *, seed: int, grid: dict[str, Any], n_basis: int | None,
                   scoring: str) -> tuple[Any, dict, float, float, float]:
    """Cross-validate ``method`` on ``(X, Y)`` and fit the chosen model on all of it.

    Parameters
    ----------
    method : {"LSPC", "ML-LSPC", "ML-kNN"}
    X : scipy sparse or np.ndarray (N, D)
    Y : scipy sparse (N, K)
        0/1 labels.
    seed : int
        ``random_state`` of the basis centres (and of the median heuristic's sample).
    grid : dict
        ``alphas``, ``couplings`` (ML-LSPC's, each > 0), ``knn`` (ML-kNN's ``n_neighbors``) and
        ``cv`` (folds).
    n_basis : int or None
        Basis functions of LSPC / ML-LSPC.
    scoring : str
        One of :data:`mlgp.baselines.mllspc_cv.SCORINGS` (e.g. "f1_example", "precision@1").

    Returns
    -------
    model, chosen parameters, best mean CV score, selection seconds (including the CV object's own
    refit), final-fit seconds
    """
    from sklearn.model_selection import GridSearchCV

    from mlgp.baselines import LSPC, MLLSPC, MLLSPCCV, MLkNN

    t0 = time.perf_counter()
    if method == "ML-kNN":
        search = GridSearchCV(MLkNN(), {"n_neighbors": grid["knn"]}, cv=grid["cv"], scoring=_knn_scorer(scoring),
                              error_score="raise").fit(X, Y)
        select = time.perf_counter() - t0
        params = dict(search.best_params_)
        t0 = time.perf_counter()
        model = MLkNN(**params).fit(X, Y)
    elif method in ("LSPC", "ML-LSPC"):
        couplings = [0.0] if method == "LSPC" else grid["couplings"]
        search = MLLSPCCV(alphas=grid["alphas"], couplings=couplings, n_basis=n_basis, cv=grid["cv"],
                          scoring=scoring, random_state=seed).fit(X, Y)
        select = time.perf_counter() - t0
        params = dict(search.best_params_)
        t0 = time.perf_counter()
        if method == "LSPC":
            params.pop("coupling")
            model = LSPC(n_basis=n_basis, random_state=seed, **params).fit(X, Y)
        else:
            model = MLLSPC(n_basis=n_basis, random_state=seed, **params).fit(X, Y)
    else:
        raise ArgumentError(f"method must be one of {LSPC_METHODS}, got {method!r}")
    return model, params, float(search.best_score_), select, time.perf_counter() - t0
