"""Metrics for multi-label ranking and classification, shared by every model family.

Ranking metrics (P@k, nDCG@k, PSP@k, PSnDCG@k; pyxclib conventions, see
:mod:`mlgp.metrics._ranking`) accept dense (N, K) scores, sparse scores or a
:class:`~mlgp.scores.TopK` — exactly what every model's ``decision_function`` and
``predict_topk`` return. :func:`evaluate` gives all of them at several cut-offs as one pandas table.

Probability metrics (:mod:`mlgp.metrics._probabilistic`) judge ``predict_proba``: the held-out log
predictive density, Brier score, expected and maximum calibration error over equal-mass bins, the
reliability curve and calibration of each point's top k; :func:`evaluate_proba` gives all of them
from sparse labels a block of rows at a time. :func:`select_thresholds` chooses decision thresholds
(one, or one per label) that maximise micro- or macro-F1 on held-out rows.
Uses NumPy, SciPy and pandas only (no TensorFlow).
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import pandas as pd

from ..errors import ShapeError
from ..scores import TopK, topk
from ..arguments import positive_int
from ._classification import f1_scores, hamming_loss
from ._bootstrap_ece import BootstrapECE, calibration_error_bootstrap, calibration_error_interval
from ._probabilistic import (ProbabilityMetrics, ProbabilityReport, brier_score, calibration_error, evaluate_proba,
                             log_predictive_density, reliability_curve)
from ._propensity import inverse_propensity, propensity_params
from ._thresholds import ThresholdChoice, select_thresholds
from ._ranking import check_inv_propensity, dcg_discounts, ideal_dcg, ndcg_at_k, precision_at_k, psndcg_at_k, psprecision_at_k, rank_against

__all__ = [
    "dcg_discounts",
    "ideal_dcg",
    "TopK",
    "topk",
    "inverse_propensity",
    "propensity_params",
    "precision_at_k",
    "ndcg_at_k",
    "psprecision_at_k",
    "psndcg_at_k",
    "f1_scores",
    "hamming_loss",
    "evaluate",
    "evaluate_proba",
    "ProbabilityMetrics",
    "ProbabilityReport",
    "log_predictive_density",
    "brier_score",
    "calibration_error",
    "calibration_error_interval",
    "calibration_error_bootstrap",
    "BootstrapECE",
    "reliability_curve",
    "ThresholdChoice",
    "select_thresholds",
]


def evaluate(
    Y_true: Any,
    scores: Any,
    ks: Sequence[int] | Iterable[int] = (1, 3, 5),
    inv_propensity: Any = None,
    percent: bool = True,
) -> pd.DataFrame:
    """All ranking metrics at several cut-offs, from a single top-``max(ks)``.

    Parameters
    ----------
    Y_true : scipy sparse or np.ndarray (N, K)
        0/1 relevance.
    scores : np.ndarray (N, K), scipy sparse (N, K) or TopK (N, >= max(ks))
        Scores or a ranking (see :func:`topk`).
    ks : sequence of int
        Cut-offs (each ``>= 1``).
    inv_propensity : np.ndarray (K,), optional
        When given, the rows "PSP" and "PSnDCG" are added.
    percent : bool
        Report values multiplied by 100.

    Returns
    -------
    pandas.DataFrame
        Index ``["P", "nDCG"]`` (+ ``["PSP", "PSnDCG"]``), columns the ints of
        ``ks``; ``.attrs`` has ``num_points`` (N) and ``percent``.
    """
    ks = [positive_int(k, "each k in ks") for k in ks]
    if not ks:
        raise ShapeError("ks must contain at least one cut-off")
    kmax = max(ks)
    r = rank_against(Y_true, scores, kmax)
    w = None
    if inv_propensity is not None:
        w = check_inv_propensity(inv_propensity, r.Y.shape[1])
    rows: dict[str, list[float]] = {
        "P": [r.precision(k) for k in ks],
        "nDCG": [r.ndcg(k) for k in ks],
    }
    if w is not None:
        rows["PSP"] = [r.psprecision(k, w) for k in ks]
        rows["PSnDCG"] = [r.psndcg(k, w) for k in ks]
    scale = 100.0 if percent else 1.0
    df = pd.DataFrame(
        [[v * scale for v in vals] for vals in rows.values()],
        index=list(rows.keys()),
        columns=ks,
    )
    df.attrs["num_points"] = int(r.N)
    df.attrs["percent"] = bool(percent)
    return df
