"""Ranking metrics: P@k, nDCG@k, PSP@k and PSnDCG@k (pyxclib conventions).

* **P@k** ``= mean_i (1/k) sum_{j<k} y_i[r_ij]``, where ``r_i`` is the ranking of
  row ``i``. Rows without any relevant label stay in the mean and add zero.
* **nDCG@k** ``= mean_i DCG_i@k / IDCG(min(k, |y_i|))`` with
  ``DCG_i@k = sum_{j<k} y_i[r_ij] / log2(j + 2)`` and ``IDCG(m)`` the DCG of ``m``
  ones. Rows without labels contribute zero (and stay in the mean).
* **PSP@k** is a *ratio of means*: the mean over rows of the propensity-weighted
  precision ``(1/k) sum_{j<k} w[r_ij] y_i[r_ij]`` divided by the mean over rows of
  the same quantity for the best achievable ranking (each row's relevant labels
  sorted by descending weight ``w``).
* **PSnDCG@k** is also a ratio of means: the mean over rows of
  ``sum_{j<k} w[r_ij] y_i[r_ij] / log2(j + 2) / IDCG(min(k, |y_i|))`` (note: the
  per-row normaliser is the *unweighted* ideal DCG, as in pyxclib) divided by the
  mean over rows of the same quantity for the best propensity-weighted ranking.
  When the denominator is zero (no row has a label) PSP/PSnDCG are reported as 0.

Scores are ranked by :func:`mlgp.scores.topk` (ties: the lower label index first; pyxclib breaks
ties arbitrarily, so on tied scores its numbers may differ). Everything is computed in float64
(pyxclib's nDCG uses float32, so it can differ by ~1e-7).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ShapeError
from ..scores import TopK, topk
from ..arguments import positive_int
from ._labels import as_binary_csr, safe_div

__all__ = ["precision_at_k", "ndcg_at_k", "psprecision_at_k", "psndcg_at_k", "Ranked", "rank_against", "check_inv_propensity",
           "dcg_discounts", "ideal_dcg"]


def _resolve_topk(Y: sp.csr_matrix, scores: Any, k: int) -> TopK:
    """Top-k of ``scores`` checked against the labels ``Y`` (N, K)."""
    N, K = Y.shape
    if isinstance(scores, TopK):
        if scores.num_rows != N:
            raise ShapeError(f"Y_true has {N} rows but the TopK has {scores.num_rows}")
        t = topk(scores, k)
        if np.isnan(t.scores).any():
            raise ShapeError("TopK scores contain NaN")
        if t.indices.size and t.indices.max() >= K:
            raise ShapeError(
                f"TopK contains label index {int(t.indices.max())} >= K={K} (Y_true columns)"
            )
        if k > 1:
            s = np.sort(t.indices, axis=1)
            if np.any(s[:, 1:] == s[:, :-1]):
                raise ShapeError("TopK rows contain duplicate label indices")
        return t
    shape = scores.shape if sp.issparse(scores) else np.shape(scores)
    if len(shape) != 2:
        raise ShapeError(f"scores must be 2-D (N, K), got shape {tuple(shape)}")
    if shape[0] != N:
        raise ShapeError(f"Y_true has {N} rows but scores have {shape[0]}")
    if shape[1] != K:
        raise ShapeError(f"Y_true has {K} columns (labels) but scores have {shape[1]}")
    return topk(scores, k)


def _hits(Y: sp.csr_matrix, indices: np.ndarray) -> np.ndarray:
    """(N, k) float array: ``Y[i, indices[i, j]]`` for a 0/1 CSR ``Y`` with sorted indices."""
    N, K = Y.shape
    k = indices.shape[1]
    if Y.nnz == 0 or indices.size == 0:
        return np.zeros((N, k), dtype=np.float64)
    row_of = np.repeat(np.arange(N, dtype=np.int64), np.diff(Y.indptr))
    true_keys = row_of * K + Y.indices.astype(np.int64)  # sorted (CSR, sorted indices)
    q = np.arange(N, dtype=np.int64)[:, None] * K + indices
    pos = np.searchsorted(true_keys, q)
    pos_c = np.minimum(pos, true_keys.size - 1)
    return (true_keys[pos_c] == q).astype(np.float64)


def check_inv_propensity(w: Any, K: int) -> np.ndarray:
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 1 or w.shape[0] != K:
        raise ShapeError(f"inv_propensity must have shape ({K},) to match Y_true, got {w.shape}")
    if not np.isfinite(w).all():
        raise ShapeError("inv_propensity contains non-finite values")
    return w


def _ideal_weights(Y: sp.csr_matrix, w: np.ndarray, k: int) -> np.ndarray:
    """(N, k): each row's relevant-label weights sorted descending, zero padded."""
    N = Y.shape[0]
    out = np.zeros((N, k), dtype=np.float64)
    if Y.nnz == 0:
        return out
    counts = np.diff(Y.indptr).astype(np.int64)
    row_of = np.repeat(np.arange(N, dtype=np.int64), counts)
    wt = w[Y.indices]
    order = np.lexsort((-wt, row_of))
    pos = np.arange(order.size, dtype=np.int64) - Y.indptr[row_of].astype(np.int64)
    keep = pos < k
    out[row_of[keep], pos[keep]] = wt[order][keep]
    return out


def dcg_discounts(k: int) -> np.ndarray:
    """(k,) the DCG discounts 1 / log2(r + 1) of ranks r = 1 … k."""
    return 1.0 / np.log2(np.arange(k, dtype=np.float64) + 2.0)


def ideal_dcg(Y: sp.csr_matrix, k: int) -> np.ndarray:
    """(N,) ideal DCG with min(k, |y_i|) ones; zero for rows without labels."""
    n = np.minimum(np.diff(Y.indptr), k)
    cum = np.concatenate([[0.0], np.cumsum(dcg_discounts(k))])
    return cum[n]


class Ranked:
    """Hits of a top-k ranking against labels, reused for all metrics and ks."""

    def __init__(self, Y: sp.csr_matrix, t: TopK):
        self.Y = Y
        self.t = t
        self.hits = _hits(Y, t.indices)
        self.N = Y.shape[0]
        self._ideal: tuple[np.ndarray, np.ndarray] | None = None

    def ideal(self, k: int, w: np.ndarray) -> np.ndarray:
        """(N, k) best achievable weights per row (cached for the largest k and ``w``)."""
        if self._ideal is None or self._ideal[0] is not w or self._ideal[1].shape[1] < k:
            self._ideal = (w, _ideal_weights(self.Y, w, max(k, self.t.k)))
        return self._ideal[1][:, :k]

    def precision(self, k: int) -> float:
        if self.N == 0:
            return 0.0
        return float(self.hits[:, :k].sum(axis=1).mean() / k)

    def ndcg(self, k: int) -> float:
        if self.N == 0:
            return 0.0
        dcg = self.hits[:, :k] @ dcg_discounts(k)
        return float(safe_div(dcg, ideal_dcg(self.Y, k)).mean())

    def psprecision(self, k: int, w: np.ndarray) -> float:
        if self.N == 0:
            return 0.0
        num = (self.hits[:, :k] * w[self.t.indices[:, :k]]).sum(axis=1).mean() / k
        den = self.ideal(k, w).sum(axis=1).mean() / k
        return float(num / den) if den > 0 else 0.0

    def psndcg(self, k: int, w: np.ndarray) -> float:
        if self.N == 0:
            return 0.0
        d = dcg_discounts(k)
        idcg = ideal_dcg(self.Y, k)
        num = safe_div((self.hits[:, :k] * w[self.t.indices[:, :k]]) @ d, idcg).mean()
        den = safe_div(self.ideal(k, w) @ d, idcg).mean()
        return float(num / den) if den > 0 else 0.0


def rank_against(Y_true: Any, scores: Any, k: int) -> Ranked:
    k = positive_int(k, "k")
    Y = as_binary_csr(Y_true)
    if not isinstance(scores, TopK) and k > Y.shape[1]:
        raise ShapeError(f"k={k} exceeds the number of labels K={Y.shape[1]}")
    return Ranked(Y, _resolve_topk(Y, scores, k))


def precision_at_k(Y_true: Any, scores: Any, k: int) -> float:
    """Precision@k (pyxclib convention).

    Parameters
    ----------
    Y_true : scipy sparse or np.ndarray (N, K)
        0/1 relevance (any int/float/bool dtype).
    scores : np.ndarray (N, K), scipy sparse (N, K) or TopK (N, >= k)
        Scores to rank (see :func:`topk`), or a ranking.
    k : int
        Cut-off, ``>= 1``.

    Returns
    -------
    float
        ``mean_i |top-k(i) ∩ y_i| / k``; rows without labels count as 0.
    """
    return rank_against(Y_true, scores, k).precision(int(k))


def ndcg_at_k(Y_true: Any, scores: Any, k: int) -> float:
    """nDCG@k (pyxclib convention): mean over rows of ``DCG@k / IDCG(min(k, |y_i|))``.

    Shapes as in :func:`precision_at_k`. Rows without labels contribute 0.
    """
    return rank_against(Y_true, scores, k).ndcg(int(k))


def psprecision_at_k(Y_true: Any, scores: Any, k: int, inv_propensity: Any) -> float:
    """Propensity-scored precision@k (pyxclib convention).

    ``PSP@k = mean_i[sum_{j<k} w[r_ij] y_i[r_ij] / k] / mean_i[best_i / k]`` where
    ``best_i`` is the sum of the ``k`` largest weights among row ``i``'s relevant
    labels (a ratio of means over rows, not a mean of per-row ratios).

    Parameters
    ----------
    Y_true, scores, k
        As in :func:`precision_at_k`.
    inv_propensity : np.ndarray (K,)
        Inverse propensity weights ``w`` (see :func:`inverse_propensity`).

    Returns
    -------
    float
        PSP@k in ``[0, 1]``; 0 when no row has a label.
    """
    r = rank_against(Y_true, scores, k)
    return r.psprecision(int(k), check_inv_propensity(inv_propensity, r.Y.shape[1]))


def psndcg_at_k(Y_true: Any, scores: Any, k: int, inv_propensity: Any) -> float:
    """Propensity-scored nDCG@k (pyxclib convention).

    ``PSnDCG@k = mean_i[wDCG_i / IDCG_i] / mean_i[wDCG*_i / IDCG_i]`` with
    ``wDCG_i = sum_{j<k} w[r_ij] y_i[r_ij] / log2(j+2)``, ``wDCG*_i`` the same for
    row ``i``'s relevant labels sorted by descending weight, and ``IDCG_i`` the
    unweighted ideal DCG with ``min(k, |y_i|)`` ones (rows without labels add 0).
    A ratio of means over rows, as in pyxclib.

    Shapes as in :func:`psprecision_at_k`.
    """
    r = rank_against(Y_true, scores, k)
    return r.psndcg(int(k), check_inv_propensity(inv_propensity, r.Y.shape[1]))
