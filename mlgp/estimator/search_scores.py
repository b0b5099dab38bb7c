"""How a grid search (:mod:`mlgp.estimator.search`) scores its candidates and lays out what it found:
the selection criteria (:data:`SCORINGS`, greater is better; :data:`TOP_K`, those of the ranking
alone) and ``cv_results_`` in :class:`~sklearn.model_selection.GridSearchCV`'s layout
(:func:`results_table`)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.stats import rankdata

from ..metrics import f1_scores, precision_at_k

__all__ = ["SCORINGS", "TIMES", "TOP_K", "plain", "results_table"]


def _dense(Y) -> np.ndarray:
    return Y.toarray() if sp.issparse(Y) else np.asarray(Y)


#: Selection criteria (greater is better): a function of the true 0/1 labels ``Y`` (dense or
#: sparse), the 0/1 predictions ``P`` and the decision scores ``S`` of the validation rows.
SCORINGS = {
    "hamming_loss": lambda Y, P, S: -float(np.mean(_dense(Y) != P)),
    "f1_example": lambda Y, P, S: f1_scores(Y, P)["example"],
    "f1_micro": lambda Y, P, S: f1_scores(Y, P)["micro"],
    "f1_macro": lambda Y, P, S: f1_scores(Y, P)["macro"],
    "precision@1": lambda Y, P, S: precision_at_k(Y, S, 1),
    "precision@3": lambda Y, P, S: precision_at_k(Y, S, 3),
    "precision@5": lambda Y, P, S: precision_at_k(Y, S, 5),
}

#: The scorings of the ranking alone (they need no predictions) → their cut-off k.
TOP_K = {"precision@1": 1, "precision@3": 3, "precision@5": 5}

TIMES = ("mean_fit_time", "std_fit_time", "mean_score_time", "std_score_time")


def plain(value):
    """``value`` as the JSON header stores it: NumPy scalars and arrays as Python numbers and lists,
    tuples as lists, dict keys as strings."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return value


def _param_column(values: list) -> np.ndarray:
    """``cv_results_["param_<name>"]``: (n,) numbers or strings, else objects (None, tuples, mixes)."""
    try:
        column = np.asarray(values)
    except ValueError:  # ragged sequences
        column = None
    if column is None or column.ndim != 1 or column.dtype.kind not in "biufU":
        column = np.empty(len(values), dtype=object)
        for i, v in enumerate(values):
            column[i] = v
    return column


def results_table(points: list[dict], splits: list, mean: np.ndarray, std: np.ndarray, times: dict) -> dict:
    """``cv_results_`` of the grid ``points``, their scores on each split, mean and std, and times."""
    # equal means share the better rank, as in GridSearchCV; means equal to 12 decimals are taken as
    # equal (fold averages of the same counts can differ in the last bit)
    rank = rankdata(-np.round(mean, 12), method="min").astype(np.int32)
    return {**times,
            **{f"param_{name}": _param_column([p[name] for p in points]) for name in sorted(points[0])},
            "params": points,
            **{f"split{i}_test_score": s for i, s in enumerate(splits)},
            "mean_test_score": mean, "std_test_score": std, "rank_test_score": rank}
