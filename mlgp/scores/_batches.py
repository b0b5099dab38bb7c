"""Scoring any (B, D) → (B, K) function over CSR or dense X a block of rows at a time."""

from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.sparse as sp

from ..errors import ShapeError
from ..validation import check_features, check_positive_int
from ._topk import TopK, topk

__all__ = ["score_in_batches"]


def score_in_batches(
    fn: Callable[[np.ndarray], np.ndarray],
    X,
    batch_size: int = 1000,
    top_k: int | None = None,
    num_labels: int | None = None,
    num_features: int | None = None,
    check_input: bool = True,
):
    """Score ``X`` a block of rows at a time.

    Parameters
    ----------
    fn
        Maps a dense float64 block (B, D) of features to its scores, an array (B, K).
    X
        (N, D) features, CSR or dense; CSR is densified ``batch_size`` rows at a time, so memory is
        O(batch_size · (D + K) + N · top_k).
    batch_size
        Rows per call of ``fn``.
    top_k
        If given, keep each row's ``top_k`` best labels (:class:`TopK`, ties by lower label index)
        instead of the dense scores.
    num_labels
        K, when known: checked against each block's width.
    num_features
        D, when known: ``X`` is checked to have D columns (with its other checks, before ``fn`` is
        first called).
    check_input
        Check ``X`` with :func:`mlgp.validation.check_features` (2-D, finite, D columns);
        ``False`` trusts a caller that has checked it already and only needs CSR or an array.

    Returns
    -------
    np.ndarray (N, K) float64, or TopK (N, top_k)
    """
    if check_input:
        X = check_features(X, num_features=num_features)
    elif not sp.issparse(X):
        X = np.asarray(X)
    batch_size = check_positive_int(batch_size, "batch_size")
    if top_k is not None:
        top_k = check_positive_int(top_k, "top_k")
        if num_labels is not None and top_k > num_labels:
            raise ShapeError(f"top_k={top_k} exceeds the number of labels K={num_labels}")
    N = X.shape[0]
    out = idx = val = None
    for start in range(0, N, batch_size):
        rows = slice(start, min(N, start + batch_size))
        xb = X[rows]
        f = np.asarray(fn(xb.toarray() if sp.issparse(xb) else xb), dtype=np.float64)
        if f.ndim != 2 or f.shape[0] != xb.shape[0] or (num_labels is not None and f.shape[1] != num_labels):
            raise ShapeError(f"the scoring function returned shape {f.shape} for a block of {xb.shape[0]} rows"
                             + (f"; expected ({xb.shape[0]}, {num_labels})" if num_labels is not None else ""))
        if top_k is None:
            if out is None:
                out = np.empty((N, f.shape[1]), dtype=np.float64)
            out[rows] = f
        else:
            if idx is None:
                if top_k > f.shape[1]:
                    raise ShapeError(f"top_k={top_k} exceeds the number of labels K={f.shape[1]}")
                idx = np.empty((N, top_k), dtype=np.int64)
                val = np.empty((N, top_k), dtype=np.float64)
            t = topk(f, top_k)
            idx[rows], val[rows] = t.indices, t.scores
    return out if top_k is None else TopK(idx, val)
