"""Classification metrics of 0/1 predictions: F1 (micro, macro, example-based) and Hamming loss."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ShapeError
from ._labels import as_binary_csr, safe_div

__all__ = ["f1_scores", "hamming_loss"]


def _confusion(Y_true: Any, Y_pred: Any) -> tuple[sp.csr_matrix, sp.csr_matrix, sp.csr_matrix]:
    T = as_binary_csr(Y_true, "Y_true")
    P = as_binary_csr(Y_pred, "Y_pred")
    if T.shape != P.shape:
        raise ShapeError(f"Y_true shape {T.shape} does not match Y_pred shape {P.shape}")
    TP = T.multiply(P).tocsr()
    return T, P, TP


def f1_scores(Y_true: Any, Y_pred: Any) -> dict[str, float]:
    """Micro, macro and example-based F1 of 0/1 predictions.

    Parameters
    ----------
    Y_true, Y_pred : scipy sparse or np.ndarray (N, K)
        0/1 matrices of the same shape.

    Returns
    -------
    dict
        ``micro``: ``2TP / (2TP + FP + FN)`` over all entries; ``macro``: mean over
        all K labels of the per-label F1; ``example``: mean over all N rows of the
        per-row F1. Every 0/0 is taken as 0 (a label or row with neither true nor
        predicted positives scores 0), matching scikit-learn's
        ``f1_score(..., zero_division=0)`` with average micro/macro/samples.
    """
    T, P, TP = _confusion(Y_true, Y_pred)
    tp_l = np.asarray(TP.sum(axis=0)).ravel()
    t_l = np.asarray(T.sum(axis=0)).ravel()
    p_l = np.asarray(P.sum(axis=0)).ravel()
    tp_i = np.asarray(TP.sum(axis=1)).ravel()
    t_i = np.asarray(T.sum(axis=1)).ravel()
    p_i = np.asarray(P.sum(axis=1)).ravel()
    tp, tot = tp_l.sum(), t_l.sum() + p_l.sum()
    micro = float(2 * tp / tot) if tot > 0 else 0.0
    macro = float(safe_div(2 * tp_l, t_l + p_l).mean()) if tp_l.size else 0.0
    example = float(safe_div(2 * tp_i, t_i + p_i).mean()) if tp_i.size else 0.0
    return {"micro": micro, "macro": macro, "example": example}


def hamming_loss(Y_true: Any, Y_pred: Any) -> float:
    """Fraction of the N*K entries where ``Y_pred`` differs from ``Y_true`` (both (N, K) 0/1)."""
    T, P, TP = _confusion(Y_true, Y_pred)
    n = T.shape[0] * T.shape[1]
    if n == 0:
        return 0.0
    wrong = T.nnz + P.nnz - 2 * TP.sum()
    return float(wrong / n)
